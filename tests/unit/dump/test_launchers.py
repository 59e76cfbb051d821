"""The launcher model (hlo_lsp/dump/launchers.py): presets, placeholder
expansion with shlex quoting, stages, cancel and copy-back commands. Pure: no
process runs here (tests/e2e/test_launchers.py runs real srun and sshd)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from hlo_lsp.dump.launchers import (Launcher, LauncherError, Stage, cancel_argv,
                                    copy_back_argv, launched_argv, launcher_from_options,
                                    make_launcher, new_job_name, parse_stage, preset_launcher,
                                    remote_cleanup_argv, remote_dump_dir, ssh_prefix)
from hlo_lsp.dump.environment import plan_run
from hlo_lsp.dump.platforms import launch_platform
from hlo_lsp.dump.recipe import PlatformError, Recipe, RecipeError

NASTY_CWD = "/tmp/my proj/it's $HOME; rm -rf *"
NASTY_DUMP = '/tmp/dump dir/"quoted" & `tick` (x)'
ENV = {"JAX_PLATFORMS": "cpu",
       "XLA_FLAGS": f'--xla_dump_to="{NASTY_DUMP}" --xla_dump_hlo_as_text'}
COMMAND = ["/venv/bin/python", "my prog;.py", "--name=a b"]


def test_presets_expand_to_the_documented_argument_lists():
    slurm = preset_launcher("slurm", args=["--partition=gpu", "--time=10"])
    assert slurm.argv == ("srun", "-v", "--job-name={jobname}", "--partition=gpu",
                          "--time=10", "{command}")
    assert slurm.kind == "slurm" and slurm.shared
    assert preset_launcher("slurm").argv[3] == "--gpus=1"
    ssh = preset_launcher("ssh", host="gpu-box", ssh_options=["-p", "2222"])
    assert ssh.argv == ("ssh", "-o", "BatchMode=yes", "-p", "2222", "gpu-box",
                        "cd {cwd} && {env} {command}")
    assert ssh.kind == "ssh" and not ssh.shared
    docker = preset_launcher("docker", image="jax:cuda")
    assert docker.argv[:4] == ("docker", "run", "--rm", "--name={jobname}")
    assert "--gpus=all" in docker.argv and docker.argv[-2:] == ("jax:cuda", "{command}")
    assert preset_launcher("podman", image="i").kind == "container"
    assert preset_launcher("apptainer", image="j.sif").argv[:3] == ("apptainer", "exec", "--nv")
    assert preset_launcher("local") is None


@pytest.mark.parametrize("kwargs, message", [
    ({"name": "kubernetes"}, "unknown launcher preset"),
    ({"name": "ssh"}, "needs a host"),
    ({"name": "docker"}, "needs an image"),
])
def test_bad_presets_are_sentences(kwargs, message):
    with pytest.raises(LauncherError, match=message):
        preset_launcher(**kwargs)


@pytest.mark.parametrize("argv, message", [
    ([], "empty"),
    (["srun", "python"], "exactly once"),
    (["srun", "{command}", "{command}"], "exactly once"),
    (["srun", "--x={HOME}", "{command}"], "unknown placeholder"),
    (["docker", "-e", "X{env}", "{command}"], "stands alone"),
])
def test_bad_launchers_are_refused(argv, message):
    with pytest.raises(LauncherError, match=message):
        make_launcher(argv)


def test_not_a_format_string():
    """Expansion is not str.format: attribute lookups stay text."""
    launcher = make_launcher(["srun", "{0.__class__}", "{command}"])
    assert launched_argv(launcher, ["x"], {}, "/w", "/d", "j") == ["srun", "{0.__class__}", "x"]


def test_an_ssh_command_is_always_a_line_for_the_remote_shell():
    """`ssh host {command}`: ssh joins its words for the remote shell, so the
    command goes as one quoted line, never as words re-split there."""
    launcher = make_launcher(["ssh", "box", "{command}"])
    argv = launched_argv(launcher, COMMAND, ENV, NASTY_CWD, NASTY_DUMP, "j")
    assert argv[:2] == ["ssh", "box"] and len(argv) == 3
    words = shlex.split(argv[2].split(" && ", 1)[1])
    assert words == ["env", "JAX_PLATFORMS=cpu", f"XLA_FLAGS={ENV['XLA_FLAGS']}", *COMMAND]
    for bad in (["ssh", "{command}", "box"], ["ssh", "box", "{env}", "{command}"]):
        with pytest.raises(LauncherError, match="last argument"):
            make_launcher(bad)


def test_only_ssh_can_work_without_a_shared_file_system():
    with pytest.raises(LauncherError, match="only an ssh launcher"):
        make_launcher(["srun", "{command}"], shared=False)


def test_a_whole_command_argument_gets_the_words_and_the_environment_once():
    launcher = make_launcher(["srun", "--chdir={cwd}", "{command}"])
    argv = launched_argv(launcher, COMMAND, ENV, NASTY_CWD, NASTY_DUMP, "hlo-lsp-1")
    assert argv[:2] == ["srun", f"--chdir={NASTY_CWD}"]
    assert argv[2:] == ["env", f"JAX_PLATFORMS=cpu", f"XLA_FLAGS={ENV['XLA_FLAGS']}",
                        *COMMAND]


def test_a_shell_command_line_is_quoted_by_shlex_and_reads_back_the_same():
    launcher = make_launcher(["ssh", "box", "cd {cwd} && {env} {command} > {dump}/log"])
    argv = launched_argv(launcher, COMMAND, ENV, NASTY_CWD, NASTY_DUMP, "j")
    line = argv[-1]
    assert line.startswith("echo hlo-lsp-remote-pgid=$$ >&2; mkdir -p -- ")
    words = shlex.split(line.split("&& ", 1)[1])
    assert words[:2] == ["cd", NASTY_CWD]
    i = words.index("&&")
    assert words[i + 1:i + 3] == ["JAX_PLATFORMS=cpu", f"XLA_FLAGS={ENV['XLA_FLAGS']}"]
    assert words[i + 3:i + 6] == COMMAND and words[-1] == f"{NASTY_DUMP}/log"


def test_the_shell_reads_the_quoted_line_as_the_original_words(tmp_path):
    """A real /bin/sh reads the expanded line back: each word arrives intact."""
    launcher = make_launcher(["sh", "-c", "{env} {command}"])
    show = ["sh", "-c", 'printf "%s\\n" "$JAX_PLATFORMS" "$XLA_FLAGS" "$@"', "x",
            NASTY_CWD, NASTY_DUMP]
    argv = launched_argv(launcher, show, ENV, NASTY_CWD, NASTY_DUMP, "j")
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["cpu", ENV["XLA_FLAGS"], NASTY_CWD, NASTY_DUMP]


def test_literal_braces_and_plain_arguments():
    launcher = make_launcher(["sh", "-c", "f() {{ :; }}; {command}", "{{x}}"])
    argv = launched_argv(launcher, ["true"], {}, "/w", "/d", "j")
    assert argv == ["sh", "-c", "f() { :; }; true", "{x}"]


def test_containers_refuse_paths_a_bind_mount_cannot_hold():
    docker = preset_launcher("docker", image="i")
    with pytest.raises(LauncherError, match="bind mount"):
        launched_argv(docker, ["python"], {}, "/a:b", "/d", "j")
    argv = launched_argv(docker, ["python", "x.py"], {"A": "1"}, NASTY_CWD, NASTY_DUMP,
                         "hlo-lsp-ab")
    assert argv[argv.index("-v") + 1] == f"{NASTY_CWD}:{NASTY_CWD}"
    assert argv[argv.index("-w") + 1] == NASTY_CWD
    assert "--name=hlo-lsp-ab" in argv
    assert argv[-4:] == ["env", "A=1", "python", "x.py"]


def test_stages_from_srun_and_the_ssh_prologue():
    slurm = preset_launcher("slurm")
    assert parse_stage(slurm, "srun: job 12 queued and waiting for resources") == \
        Stage("queued", "12", "slurm")
    assert parse_stage(slurm, "srun: job 12 has been allocated resources") == \
        Stage("running", "12", "slurm")
    assert parse_stage(slurm, "srun: jobid 7: nodes(1):`localhost', cpu counts: 1(x1)") == \
        Stage("running", "7", "slurm")
    assert parse_stage(slurm, "srun: launching StepId=7.0") is None
    assert Stage("queued", "12", "slurm").message() == "queued in SLURM (job 12)"
    ssh = preset_launcher("ssh", host="h")
    assert parse_stage(ssh, "hlo-lsp-remote-pgid=4242") == Stage("running", "4242", "ssh")
    assert parse_stage(ssh, "srun: jobid 7: x") is None


def test_cancel_reaches_the_remote_side():
    slurm = preset_launcher("slurm")
    assert cancel_argv(slurm, "hlo-lsp-1", "12") == ["scancel", "12"]
    assert cancel_argv(slurm, "hlo-lsp-1", None) == ["scancel", "--name=hlo-lsp-1"]
    ssh = preset_launcher("ssh", host="u@h", ssh_options=["-i", "k y"])
    stop = cancel_argv(ssh, "j", "4242")
    assert stop[:-1] == ["ssh", "-o", "BatchMode=yes", "-i", "k y", "u@h"]
    assert "kill -TERM -- -4242" in stop[-1] and "kill -KILL -- -4242" in stop[-1]
    assert cancel_argv(ssh, "j", None) is None
    assert cancel_argv(preset_launcher("docker", image="i"), "hlo-lsp-9", None) == \
        ["docker", "kill", "hlo-lsp-9"]
    assert cancel_argv(preset_launcher("apptainer", image="i"), "j", None) is None


def test_copy_back_uses_the_same_ssh_options():
    ssh = preset_launcher("ssh", host="u@h", ssh_options=["-p", "2222", "-i", "/k y"])
    assert ssh_prefix(ssh) == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", "/k y", "u@h"]
    rsync = copy_back_argv(ssh, "/tmp/hlo-lsp-1", "/local dir", tool="rsync")
    assert rsync[:4] == ["rsync", "-a", "-s", "-e"]
    assert shlex.split(rsync[4]) == ["ssh", "-o", "BatchMode=yes", "-p", "2222", "-i", "/k y"]
    assert rsync[5:] == ["u@h:/tmp/hlo-lsp-1/", "/local dir/"]
    scp = copy_back_argv(ssh, "/tmp/hlo-lsp-1", "/local dir", tool="scp")
    assert scp == ["scp", "-r", "-q", "-o", "BatchMode=yes", "-P", "2222", "-i", "/k y",
                   "u@h:/tmp/hlo-lsp-1/.", "/local dir"]
    assert remote_cleanup_argv(ssh, "/tmp/x y")[-1] == "rm -rf -- '/tmp/x y'"
    with pytest.raises(LauncherError):
        copy_back_argv(preset_launcher("slurm"), "/a", "/b")


def test_job_names_and_remote_dirs_are_unique():
    a, b = new_job_name(), new_job_name()
    assert a != b and a.startswith("hlo-lsp-")
    assert remote_dump_dir(a) == f"/tmp/{a}"


def test_options_from_settings_or_the_command_line():
    assert launcher_from_options() is None
    assert launcher_from_options("local") is None
    custom = launcher_from_options(argv="srun --gpus=1 {command}")
    assert custom.argv == ("srun", "--gpus=1", "{command}") and custom.name == "custom"
    ssh = launcher_from_options("ssh", host="h", ssh_options="-p 22 -i '/a b'")
    assert ssh.argv[3:7] == ("-p", "22", "-i", "/a b")


def test_the_launcher_round_trips_through_a_recipe_and_is_part_of_the_plan():
    launcher = preset_launcher("slurm", args=["--partition=gpu"])
    recipe = Recipe(["python3", "x.py"], "/w", launcher=launcher)
    back = Recipe.from_json(recipe.to_json())
    assert back.launcher == launcher
    with pytest.raises(RecipeError, match="launcher"):
        Recipe.from_json({**recipe.to_json(), "launcher": {"argv": ["srun", "x"]}})
    with pytest.raises(RecipeError, match="launcher"):
        Recipe.from_json({**recipe.to_json(), "launcher": "srun {command}"})
    plain = plan_run(Recipe(["python3", "x.py"], "/w"), {})
    here = plan_run(Recipe(["python3", "x.py"], "/w"), {}, None)
    slurm = plan_run(Recipe(["python3", "x.py"], "/w"), {}, launcher)
    other = plan_run(Recipe(["python3", "x.py"], "/w"), {},
                     preset_launcher("slurm", args=["--partition=debug"]))
    assert plain.fingerprint() == here.fingerprint()
    assert len({plain.fingerprint(), slurm.fingerprint(), other.fingerprint()}) == 3
    ssh = plan_run(Recipe(["python3", "x.py"], "/w"), {}, preset_launcher("ssh", host="h"))
    assert ssh.argv == ("python3", "x.py") and ssh.interpreter is None  # not resolved here


def test_the_platform_of_a_launched_run_is_not_probed_here():
    assert launch_platform("cpu", None) == "cpu"
    assert launch_platform("gpu", None) == "cuda"
    assert launch_platform("auto", "rocm") == "rocm"
    assert launch_platform(None, None) == "cuda"
    with pytest.raises(PlatformError):
        launch_platform("quantum", None)


def test_launcher_is_frozen_and_hashable():
    assert hash(Launcher(("srun", "{command}"))) == hash(Launcher(("srun", "{command}")))


def test_the_name_shown_comes_from_what_runs():
    assert Launcher.from_json({"argv": ["srun", "{command}"], "name": "slurm"}).name == "slurm"
    liar = Launcher.from_json({"argv": ["ssh", "evil", "{env} {command}"], "name": "slurm"})
    assert liar.name == "custom"
    assert Launcher.from_json({"argv": ["ssh", "h", "{command}"], "name": "local"}).name == \
        "custom"
    assert preset_launcher("podman", image="i").name == "podman"


@pytest.mark.parametrize("args, message", [
    (["--host", "x"], "--host is an option of a launcher preset"),
    (["--launcher", "srun {command}", "--image", "i"], "an argument list holds its own"),
    (["--launcher", "srun"], "must hold {command} exactly once"),
    (["--launcher", "ssh"], "needs a host"),
    (["--launcher", "slurm", "--not-shared"], "only an ssh launcher"),
    (["--not-shared"], "give --launcher"),
])
def test_dump_cli_refuses_launcher_options_that_cannot_work(args, message, tmp_path):
    """Usage errors of `hlo-lsp dump --launcher`: status 2, a sentence, nothing run."""
    done = subprocess.run([sys.executable, "-m", "hlo_lsp", "dump", *args, "--out", "d", "--",
                           "python3", "-c", "raise SystemExit(9)"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "d").exists()
