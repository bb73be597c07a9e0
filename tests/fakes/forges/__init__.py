"""Local HTTP servers that speak GitHub's, GitLab's and Gitea's JSON over a small Git model."""
