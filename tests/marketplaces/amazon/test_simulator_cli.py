"""`marketsync sandbox amazon`: the simulator as its own process on loopback, accepting the application the service
is configured with, printing its URLs, stopping on SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import httpx

from tests.support.processes import REPO_ROOT


def test_sandbox_amazon_serves_the_simulator_as_its_own_process() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MARKETSYNC_")}
    env.update({
        "PYTHONPATH": str(REPO_ROOT), "MARKETSYNC_BASE_URL": "http://127.0.0.1:9999",
        "MARKETSYNC_AMAZON_APP_ID": "amzn1.sp.solution.test", "MARKETSYNC_AMAZON_LWA_CLIENT_ID": "client-test",
        "MARKETSYNC_AMAZON_LWA_CLIENT_SECRET": "secret-test",
    })  # fmt: skip
    process = subprocess.Popen(
        [sys.executable, "-m", "marketsync", "sandbox", "amazon", "--port", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Amazon SP-API simulator on http://127.0.0.1:")
        url = first.split(" on ", 1)[1].split(" ", 1)[0]
        lines = [process.stdout.readline().strip() for _ in range(7)]
        assert f"MARKETSYNC_AMAZON_LWA_URL={url}/auth/o2/token" in lines
        assert "redirect URI: http://127.0.0.1:9999/app/marketplaces/amazon/callback" in lines
        assert not any("secret-test" in line for line in lines)  # a configured secret is never printed
        state = httpx.get(f"{url}/_simulator/state", timeout=5).json()
        assert state["Applications"][0]["client_id"] == "client-test"
        [seller] = state["Sellers"]
        refresh = httpx.post(f"{url}/_simulator/sellers/{seller['selling_partner_id']}/authorise", json={}).json()
        token = httpx.post(f"{url}/auth/o2/token", timeout=5, data={
            "grant_type": "refresh_token", "refresh_token": refresh["refresh_token"], "client_id": "client-test",
            "client_secret": "secret-test"})  # fmt: skip
        assert token.status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
        if process.stdout:
            process.stdout.close()
