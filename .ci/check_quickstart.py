"""CI: the README's Quick start server command works as written, from a fresh clone.

    python3 .ci/check_quickstart.py                       # with the python3 on PATH
    python3 .ci/check_quickstart.py --python /usr/bin/python3 --pep668

It clones this repository (its committed HEAD) into a temporary folder, runs the
README's server command there with ``bash`` exactly as written (the home is a
temporary one; ``TRON_PORT`` picks a free port), waits for "listening" and for
``GET /health``, checks that the project environment got no development tool
(pytest, ruff, mypy), and stops the server with SIGINT.

``--python`` puts that interpreter first on PATH as ``python3``. ``--pep668``
first checks that it really is an externally managed Python (``pip install``
outside a virtual environment refuses with "externally-managed-environment", as
Debian's and Ubuntu's own Python do): the command then proves it never installs
into the system's Python. Only the standard library is used here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEV_TOOLS = ("pytest", "ruff", "mypy", "lint-imports")


def quickstart_commands(readme: str) -> list[str]:
    """The shell commands of the README's Quick start block, comments dropped."""
    section = readme.split("## Quick start", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, re.S)
    if block is None:
        raise SystemExit("the README's Quick start has no sh block")
    return [
        line.strip()
        for line in block.group(1).splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def server_command(readme: str) -> str:
    [command] = [c for c in quickstart_commands(readme) if "tron-server" in c]
    return command


def test_command(readme: str) -> str:
    [command] = [c for c in quickstart_commands(readme) if c.endswith("pytest")]
    return command


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cache_env() -> dict[str, str]:
    """Keep using this machine's download caches under the temporary home."""
    home = Path.home()
    env = {}
    uv_cache = os.environ.get("UV_CACHE_DIR") or str(home / ".cache" / "uv")
    env["UV_CACHE_DIR"] = uv_cache
    env["PIP_CACHE_DIR"] = os.environ.get("PIP_CACHE_DIR") or str(home / ".cache" / "pip")
    return env


def check_pep668(python: str) -> None:
    result = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "uv"], capture_output=True, text=True
    )
    if result.returncode == 0 or "externally-managed-environment" not in result.stderr:
        raise SystemExit(
            f"{python} is not an externally managed Python (pip install worked or failed "
            f"otherwise): {result.stderr.strip()[-500:]}"
        )
    print(f"quickstart: {python} refuses pip install outside a venv (PEP 668), as expected")


def run(python: str | None, timeout: float) -> None:
    readme = (ROOT / "README.md").read_text()
    command = server_command(readme)
    tmp = Path(tempfile.mkdtemp(prefix="tron-quickstart-"))
    try:
        clone = tmp / "tron"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")
        }
        env.update(cache_env())
        env["HOME"] = str(tmp / "home")
        port = free_port()
        env["TRON_PORT"] = str(port)
        if python is not None:
            bindir = tmp / "bin"
            bindir.mkdir()
            (bindir / "python3").symlink_to(python)
            env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        print(f"quickstart: in a fresh clone: {command}", flush=True)
        proc = subprocess.Popen(
            ["bash", "-c", command], cwd=clone, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        output: list[str] = []
        listening = threading.Event()

        def read() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                output.append(line)
                if "listening" in line:
                    listening.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            deadline = time.monotonic() + timeout
            while not listening.wait(1):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit("the server did not start:\n" + "".join(output[-40:]))
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=30) as r:
                if r.status != 200:
                    raise SystemExit(f"/health answered {r.status}")
            installed = [t for t in DEV_TOOLS if (clone / ".venv" / "bin" / t).exists()]
            if installed:
                raise SystemExit(f"running the server installed development tools: {installed}")
            if (clone / ".venv" / "bin" / "tron-server").exists() is False:
                raise SystemExit("the project environment is not in the clone's .venv")
        finally:
            stop(proc, Path(env["HOME"]) / ".tron" / "server.json")
            reader.join(10)
        if "Traceback" in "".join(output):
            raise SystemExit("a traceback reached the terminal:\n" + "".join(output[-40:]))
        shown = python or "python3"
        print(f"quickstart: /health answered; no development tools installed ({shown})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def stop(proc: subprocess.Popen[str], record: Path) -> None:
    """SIGINT to the server, as Ctrl-C would (the pid it recorded; else the whole group)."""
    if proc.poll() is not None:
        return
    try:
        pid = int(json.loads(record.read_text())["pid"])
        os.kill(pid, signal.SIGINT)
    except (OSError, ValueError, KeyError):
        os.killpg(proc.pid, signal.SIGINT)
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", help="the python3 to run the commands with")
    parser.add_argument("--pep668", action="store_true", help="check it is externally managed")
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    if args.pep668:
        check_pep668(args.python or "python3")
    run(args.python, args.timeout)


if __name__ == "__main__":
    main()
