"""Feature snapshots keyed by content: a run links the exact bundle it used.

Existing rows get the digest of what they hold. Runs made before runs linked their snapshot are
linked now, from the bundle their own features stage stored (a new row when it differs from the
day's stored one), so every run with a features stage points at what it was shown.
"""

import hashlib
import json

from django.db import migrations, models


def _digest(stored) -> str:
    canonical = json.dumps(stored, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def digest_and_link(apps, schema_editor):
    FeatureSnapshot = apps.get_model("trading", "FeatureSnapshot")
    PipelineRun = apps.get_model("trading", "PipelineRun")
    StageRun = apps.get_model("trading", "StageRun")
    for snapshot in FeatureSnapshot.objects.all().iterator():
        snapshot.digest = _digest(snapshot.bundle)
        snapshot.save(update_fields=["digest"])
    unlinked = PipelineRun.objects.filter(feature_snapshot__isnull=True).values_list("pk", "instrument_id", "as_of")
    for run_id, instrument_id, as_of in unlinked.iterator():
        stage = StageRun.objects.filter(run_id=run_id, stage="features", status="done").first()
        bundle = (stage.output or {}).get("bundle") if stage else None
        if not bundle:
            continue
        snapshot, _ = FeatureSnapshot.objects.get_or_create(
            instrument_id=instrument_id,
            as_of=as_of,
            digest=_digest(bundle),
            defaults={"bundle": bundle, "fallback": bool(bundle.get("fallback", False))},
        )
        PipelineRun.objects.filter(pk=run_id).update(feature_snapshot=snapshot)


class Migration(migrations.Migration):
    dependencies = [("trading", "0013_stage_rows_and_run_snapshot")]

    operations = [
        migrations.RemoveConstraint(model_name="featuresnapshot", name="feature_snapshot_unique_per_day"),
        migrations.AddField(
            model_name="featuresnapshot",
            name="digest",
            field=models.CharField(default="", help_text="SHA-256 of the bundle's canonical JSON", max_length=64),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="featuresnapshot", name="computed_at", field=models.DateTimeField(auto_now_add=True)
        ),
        migrations.AlterModelOptions(
            name="featuresnapshot", options={"ordering": ["instrument", "-as_of", "-computed_at"]}
        ),
        migrations.RunPython(digest_and_link, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="featuresnapshot",
            constraint=models.UniqueConstraint(
                fields=("instrument", "as_of", "digest"), name="feature_snapshot_once_per_content"
            ),
        ),
    ]
