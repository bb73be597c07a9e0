"""`python -m tests.fakes.oidc_provider.manage <command>`: the test identity provider's manage.py."""

import os
import sys

if __name__ == "__main__":
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.fakes.oidc_provider.settings"
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
