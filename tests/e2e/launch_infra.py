"""Real launch targets for the launcher tests (issue 16), started by the tests
themselves in temporary directories and stopped afterwards:

- :func:`slurm_cluster`: a single-node SLURM cluster from Debian's ``slurmctld``,
  ``slurmd`` and ``munge``: its own munge key and socket, a ``slurm.conf`` with
  state, spool, pid and log files in the directory and free ports; the daemons
  run in the foreground as children of the test (root: SlurmUser=root). Clients
  find it through ``SLURM_CONF``.
- :func:`sshd_server`: Debian's OpenSSH ``sshd`` on a free loopback port with a
  throw-away host key and user key (``StrictModes no``, ``UsePAM no``).

Nothing outside the directory is changed, except sshd's privilege separation
directory ``/run/sshd`` (compiled into Debian's sshd): created when missing and
removed again. A missing package or user rights makes :func:`need` skip the
test, or fail it when ``HLO_LSP_REQUIRE_LAUNCHERS`` is set (.ci/run sets it:
CI must not skip these silently).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import pathlib
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass, field

import pytest

REQUIRED = bool(os.environ.get("HLO_LSP_REQUIRE_LAUNCHERS"))
START_TIMEOUT_S = 30.0
#: Debian's sftp server (openssh-sftp-server), as Debian's sshd_config names it: scp
#: speaks SFTP since OpenSSH 9.0.
SFTP_SERVER = "/usr/lib/openssh/sftp-server"


def need(*programs: str, root: bool = False) -> None:
    """Skip (fail when HLO_LSP_REQUIRE_LAUNCHERS is set) unless every program is
    on PATH (or in /usr/sbin) and, with ``root``, the test runs as root."""
    missing = [p for p in programs if which(p) is None]
    why = []
    if missing:
        why.append(f"missing {', '.join(missing)} (Debian: apt-get install slurmctld "
                   "slurmd munge openssh-server openssh-client rsync)")
    if root and os.geteuid() != 0:
        why.append("not root (slurmd and sshd run as root here)")
    if why:
        message = "; ".join(why)
        if REQUIRED:
            pytest.fail(f"HLO_LSP_REQUIRE_LAUNCHERS is set but: {message}")
        pytest.skip(message)


def which(program: str) -> str | None:
    """``program`` on PATH, else in /usr/sbin or /sbin (daemons)."""
    return shutil.which(program) or next(
        (str(p) for d in ("/usr/sbin", "/sbin") if (p := pathlib.Path(d) / program).is_file()),
        None)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait(check, what: str, procs: list[subprocess.Popen], logs: list[pathlib.Path]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if check():
            return
        dead = [p for p in procs if p.poll() is not None]
        if dead:
            break
        time.sleep(0.2)
    text = "\n".join(f"--- {p}:\n{p.read_text(errors='replace')[-2000:]}"
                     for p in logs if p.exists())
    raise RuntimeError(f"{what} did not come up:\n{text}")


def _stop(procs: list[subprocess.Popen]) -> None:
    for p in reversed(procs):
        if p.poll() is None:
            p.terminate()
    for p in reversed(procs):
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(5)


@dataclass
class Slurm:
    """A running cluster: ``env`` holds ``SLURM_CONF`` (add it to a client's
    environment); ``root`` its directory."""

    root: pathlib.Path
    env: dict[str, str] = field(default_factory=dict)

    def run(self, *argv: str) -> str:
        """The stdout of a SLURM client command against this cluster."""
        return subprocess.run(list(argv), env={**os.environ, **self.env}, text=True,
                              capture_output=True, check=True, timeout=30).stdout

    def jobs(self) -> list[str]:
        """``JOBID NAME STATE`` of every job in ``squeue``."""
        return [line for line in self.run("squeue", "-h", "-o", "%i %j %T").splitlines()
                if line.strip()]


@contextlib.contextmanager
def slurm_cluster(root: pathlib.Path):
    """Start munged, slurmctld and slurmd configured in ``root``; yield a
    :class:`Slurm`; stop them (every job with them)."""
    need("munged", "slurmctld", "slurmd", "srun", "scancel", "squeue", "sinfo", root=True)
    root.mkdir(parents=True, exist_ok=True)
    munge = root / "munge"
    munge.mkdir(mode=0o700)
    key = munge / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    for d in ("state", "spool", "log"):
        (root / d).mkdir()
    socket_path = munge / "socket"
    conf = root / "slurm.conf"
    conf.write_text(f"""\
ClusterName=hlolsptest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket_path}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmctldLogFile={root}/log/slurmctld.log
SlurmdLogFile={root}/log/slurmd.log
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
KillWait=2
NodeName=localhost CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP
""")
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen] = []
    logs = [munge / "munged.log", root / "log" / "slurmctld.log", root / "log" / "slurmd.log"]
    try:
        procs.append(subprocess.Popen(
            [which("munged"), "-F", "-f", f"--socket={socket_path}", f"--key-file={key}",
             f"--pid-file={munge}/munged.pid", f"--log-file={munge}/munged.log",
             f"--seed-file={munge}/munged.seed"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True))
        _wait(socket_path.exists, "munged", procs, logs)
        for daemon, extra in (("slurmctld", []), ("slurmd", ["-N", "localhost"])):
            with open(root / "log" / f"{daemon}.out", "wb") as out:
                procs.append(subprocess.Popen(
                    [which(daemon), "-D", "-f", str(conf), *extra], env=env, stdout=out,
                    stderr=subprocess.STDOUT, start_new_session=True))
        cluster = Slurm(root, {"SLURM_CONF": str(conf)})

        def idle() -> bool:
            try:
                return cluster.run("sinfo", "-h", "-o", "%t").strip() == "idle"
            except subprocess.CalledProcessError:
                return False

        _wait(idle, "the SLURM node", procs, [*logs, root / "log" / "slurmctld.out",
                                               root / "log" / "slurmd.out"])
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            subprocess.run(["scancel", "--full", "--user", getpass.getuser()], env=env,
                           timeout=10, capture_output=True)
        _stop(procs)


@dataclass
class Sshd:
    """A running sshd: ``host`` (``user@127.0.0.1``) and ``options`` for the ssh
    client (port, the user key, no host key checks)."""

    host: str
    options: list[str]
    port: int

    def ssh(self, command: str) -> subprocess.CompletedProcess:
        """Run ``command`` through this sshd."""
        return subprocess.run(["ssh", *self.options, self.host, command], text=True,
                              capture_output=True, timeout=30)


@contextlib.contextmanager
def sshd_server(root: pathlib.Path):
    """Start sshd on a free loopback port with keys in ``root``; yield a
    :class:`Sshd`; stop it, and remove /run/sshd when it was created here."""
    need("sshd", "ssh", "ssh-keygen", "rsync", "scp", root=True)
    if not os.path.exists(SFTP_SERVER):
        message = f"missing {SFTP_SERVER} (Debian: apt-get install openssh-sftp-server)"
        if REQUIRED:
            pytest.fail(f"HLO_LSP_REQUIRE_LAUNCHERS is set but: {message}")
        pytest.skip(message)
    root.mkdir(parents=True, exist_ok=True)
    for name in ("host_key", "user_key"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(root / name)],
                       check=True)
    (root / "authorized_keys").write_text((root / "user_key.pub").read_text())
    (root / "authorized_keys").chmod(0o600)
    port = free_port()
    (root / "sshd_config").write_text(f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {root}/host_key
AuthorizedKeysFile {root}/authorized_keys
PidFile {root}/sshd.pid
StrictModes no
UsePAM no
PermitRootLogin yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
Subsystem sftp {SFTP_SERVER}
""")
    privsep = pathlib.Path("/run/sshd")
    made_privsep = not privsep.exists()
    if made_privsep:
        privsep.mkdir(mode=0o755)
    options = ["-p", str(port), "-i", str(root / "user_key"), "-o", "StrictHostKeyChecking=no",
               "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR"]
    server = Sshd(f"{getpass.getuser()}@127.0.0.1", options, port)
    procs: list[subprocess.Popen] = []
    try:
        with open(root / "sshd.log", "wb") as log:
            procs.append(subprocess.Popen([which("sshd"), "-D", "-e", "-f",
                                           str(root / "sshd_config")],
                                          stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True))
        _wait(lambda: server.ssh("true").returncode == 0, "sshd", procs, [root / "sshd.log"])
        yield server
    finally:
        _stop(procs)
        if made_privsep:
            with contextlib.suppress(OSError):
                privsep.rmdir()
