"""compose.yaml cannot run here (no Docker engine): at least every command and setting it names is real."""

from __future__ import annotations

import yaml

from app.config import ROOT, Settings

COMMANDS = {"serve", "worker", "migrate", "sync-content"}


def test_compose_names_real_commands_and_settings() -> None:
    compose = yaml.safe_load((ROOT / "compose.yaml").read_text())
    services = compose["services"]
    assert {"postgres", "redis", "migrate", "web", "worker", "proxy"} <= set(services)
    fields = set(Settings.model_fields)
    for name in ("migrate", "web", "worker"):
        service = services[name]
        command = " ".join(service["command"])
        used = {word for word in command.replace("&&", " ").split() if word in COMMANDS}
        assert used, f"{name}: {command}"
        for key in service["environment"]:
            if key.startswith("KVPREP_"):
                assert key.removeprefix("KVPREP_").lower() in fields, f"{name}: no setting {key}"
            else:
                assert key in {"DATABASE_URL", "REDIS_URL"}, key
        assert service["environment"]["DATABASE_URL"].startswith("postgresql+psycopg://")
    assert services["web"]["environment"]["KVPREP_GRADING_WORKERS"] == "0"  # the workers grade
    assert services["web"]["environment"]["KVPREP_SYNC_CONTENT_ON_START"] == "false"
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert "server web:8000" in compose["configs"]["nginx"]["content"]
