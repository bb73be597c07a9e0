resource "docker_container" "vault" {
  name  = "vault"
  image = "hashicorp/vault:1.17.2"
}

resource "docker_container" "cache" {
  name  = "cache"
  image = "registry.example.com:5000/platform/redis:${var.redis_tag}"
}

resource "aws_ecs_task_definition" "api" {
  family = "api"
  container_definitions = jsonencode([
    {
      name      = "api"
      "image"   = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/acme/api:v1.3.0"
      essential = true
    },
  ])
}

resource "helm_release" "web" {
  name  = "web"
  chart = "web"
  values = [yamlencode({
    image = {
      repository = "ghcr.io/acme/web"
      tag        = 1.25
    }
  })]
}
