"""DRF's authtoken table kept every API token in plaintext. Knox replaced it (hashed, expiring), so
the old table and the keys in it are dropped rather than left on disk."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("knox", "0009_extend_authtoken_field")]

    operations = [
        migrations.RunSQL("DROP TABLE IF EXISTS authtoken_token", reverse_sql=migrations.RunSQL.noop),
    ]
