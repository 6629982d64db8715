"""No credential reaches any file of a run: the manifest redacts every credential-like key and
URL userinfo, and a whole run's output is searched for the credential values."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from racks import sim_rack_text

from bench.model.provenance import redact
from bench.model.store import RunStore

ROOT = Path(__file__).resolve().parent.parent
SECRETS = {"RACKCLOCK_SIM_BMC_PASSWORD": "bmc-Pw-7d1c9e",
           "RACKCLOCK_SIM_PDU_PASSWORD": "pdu-V3key-4a8b",
           "RACKCLOCK_SIM_PDU_COMMUNITY": "comm-Str-93f0"}


def test_manifest_redacts_credential_keys_and_url_userinfo(tmp_path):
    store = RunStore(tmp_path, "r")
    store.write_manifest({"argv": ["rackclock", "https://admin:hunter2@10.0.0.5/redfish"],
                          "inventory": {"devices": {"x": {
                              "community": "public-c", "privacy_key": "priv-k", "token": "tok-t",
                              "auth_key": "auth-k", "password": "pw-p", "api_secret": "sec-s",
                              "password_env": "NAME_OF_VAR",
                              "address": "snmp://user:pass-u@10.0.0.9"}}}})
    store.update_device("x", identity={"serial": "S1"}, note="see https://a:b-c@h/")
    store.close()
    text = (tmp_path / "r" / "manifest.json").read_text()
    for value in ("hunter2", "public-c", "priv-k", "tok-t", "auth-k", "pw-p", "sec-s",
                  "pass-u", "b-c"):
        assert value not in text, value
    assert "NAME_OF_VAR" in text and "S1" in text
    assert redact({"k": {"secret": None}}) == {"k": {"secret": None}}


def test_no_credential_value_in_any_output_file(tmp_path):
    rack = tmp_path / "rack.toml"
    rack.write_text(sim_rack_text(["bmc-1", "pdu-1", "pdu-2"], seed=3))
    env = {**os.environ, **SECRETS, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "runs"
    p = subprocess.run([sys.executable, "-m", "bench.cli", "run", "--rack", str(rack),
                        "--duration", "8", "--out", str(out)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=180)
    assert "run folder:" in p.stdout, p.stdout + p.stderr
    files = [f for f in out.rglob("*") if f.is_file()]
    assert len(files) > 8
    for f in files:
        data = f.read_bytes()
        for var, value in SECRETS.items():
            assert value.encode() not in data, f"{var}'s value in {f}"
    for value in SECRETS.values():
        assert value not in p.stdout + p.stderr
