"""A private PostgreSQL cluster for tests that stop and restart the database server itself.

``initdb`` into a temporary directory, trust authentication, a free port on 127.0.0.1, the
socket in the same directory: nothing another test (or developer) uses is touched. PostgreSQL
refuses to run as root, so under root the cluster runs as the ``postgres`` system user.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.live import free_port


def postgres_bin_dir() -> Path | None:
    """The newest ``/usr/lib/postgresql/*/bin`` (Debian) or the directory of ``initdb`` on PATH."""
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin"), key=lambda path: int(Path(path).parent.name or 0)
    )
    for directory in reversed(candidates):
        if (Path(directory) / "initdb").exists() and (Path(directory) / "pg_ctl").exists():
            return Path(directory)
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).parent
    return None


def unavailable_reason() -> str | None:
    """Why a private cluster cannot be started here, or ``None``."""
    if postgres_bin_dir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root and there is no 'postgres' user to run the server as"
    return None


class PrivateCluster:
    """One throw-away PostgreSQL server: :meth:`start`, :meth:`stop`, :meth:`restart`, :meth:`destroy`."""

    def __init__(self) -> None:
        bin_dir = postgres_bin_dir()
        assert bin_dir is not None
        self.bin_dir = bin_dir
        self.port = free_port()
        self.root = Path(tempfile.mkdtemp(prefix="perftrack-faults-pg-"))
        self.data = self.root / "data"
        self._as_postgres: list[str] = []
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.root, user.pw_uid, user.pw_gid)
            self._as_postgres = ["runuser", "-u", "postgres", "--"]
        self._pg("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")

    @property
    def url(self) -> str:
        """A URL of the ``postgres`` database (psycopg driver)."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c synchronous_commit=off"
        )
        self._pg(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start"
        )

    def stop(self) -> None:
        """Fast shutdown: sessions are terminated, as a database restart in production does."""
        self._pg("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def destroy(self) -> None:
        subprocess.run(
            [
                *self._as_postgres,
                str(self.bin_dir / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                "immediate",
                "stop",
            ],
            capture_output=True,
            check=False,
        )
        shutil.rmtree(self.root, ignore_errors=True)

    def _pg(self, program: str, *args: str) -> None:
        completed = subprocess.run(
            [*self._as_postgres, str(self.bin_dir / program), *args],
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode != 0:
            raise RuntimeError(
                f"{program} failed ({completed.returncode}): {completed.stderr or completed.stdout}"
            )
