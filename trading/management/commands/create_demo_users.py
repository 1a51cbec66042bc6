from __future__ import annotations

from django.core.management.base import BaseCommand, CommandParser

from trading.access import create_demo_users


class Command(BaseCommand):
    help = "Create the demo users viewer, approver and admin. New passwords are printed once."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reset-passwords", action="store_true", help="give every demo user a new password")

    def handle(self, *args, reset_passwords: bool, **options) -> None:
        for login in create_demo_users(reset_passwords=reset_passwords):
            if login.password:
                self.stdout.write(f"  {login.role:<9} user {login.username!r:<11} password {login.password}")
            else:
                self.stdout.write(
                    f"  {login.role:<9} user {login.username!r:<11} (exists; password unchanged, "
                    "--reset-passwords prints new ones)"
                )
