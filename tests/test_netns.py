"""Act 5's ranks in a network of their own (autograder.netns): a process started through the
launcher reaches its own loopback and no service of the host's, and nothing of the folder it starts
in runs before its sandbox."""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys

import pytest

from autograder import netns, osguard

REPORT = (
    "import json, socket, sys\n"
    "found = {'interfaces': sorted(name for _, name in socket.if_nameindex())}\n"
    "try:\n"
    "    socket.create_connection(('127.0.0.1', int(sys.argv[1])), timeout=5).close()\n"
    "    found['host service'] = 'reached'\n"
    "except OSError as error:\n"
    "    found['host service'] = type(error).__name__\n"
    "own = socket.socket()\n"
    "own.bind(('127.0.0.1', 0))\n"
    "own.listen()\n"
    "socket.create_connection(own.getsockname(), timeout=5).close()\n"
    "found['own loopback'] = 'reached'\n"
    "print(json.dumps(found))\n"
)


@pytest.fixture
def network():
    made = netns.PrivateNetwork()
    yield made
    made.close()
    assert made.process.pid not in osguard.KEPT


def test_a_launched_process_reaches_its_own_loopback_and_no_host_service(network, tmp_path):
    with socket.socket() as service:
        service.bind(("127.0.0.1", 0))
        service.listen()
        # A module of the folder the worker starts in, where an earlier rank's code may write: never run.
        (tmp_path / "ctypes.py").write_text("open('planted-ran', 'w').close()\n")
        env = {**os.environ, **network.env()}
        done = subprocess.run(netns.launch([sys.executable, "-c", REPORT, str(service.getsockname()[1])], env), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    assert not (tmp_path / "planted-ran").exists()
    if network.kind == "none":
        # A machine where no namespace can be made: the launcher starts the process as it is, and says nothing.
        assert network.env() == {} and found["host service"] == "reached" and "keep the host's network" in network.fact
    else:
        assert found == {"interfaces": ["lo"], "host service": "ConnectionRefusedError", "own loopback": "reached"}
        assert network.env()["NCCL_SOCKET_IFNAME"] == "lo" and network.process.pid in osguard.KEPT


ESCAPE = (
    "import ctypes, json, os, sys\n"
    "from autograder import osguard\n"
    "osguard.drop_capabilities()\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "tried = {}\n"
    "for name, flags in (('back to the host network', 0x40000000), ('a user namespace, then back', 0x10000000)):\n"
    "    if flags == 0x10000000 and libc.unshare(flags) != 0:\n"
    "        tried[name] = 'no user namespace: ' + os.strerror(ctypes.get_errno())\n"
    "        continue\n"
    "    try:\n"
    "        fd = os.open(f'/proc/{sys.argv[1]}/ns/net', os.O_RDONLY)\n"
    "    except OSError as error:\n"
    "        tried[name] = error.strerror\n"
    "        continue\n"
    "    tried[name] = 'joined' if libc.setns(fd, 0x40000000) == 0 else os.strerror(ctypes.get_errno())\n"
    "print(json.dumps(tried))\n"
)


def test_a_rank_cannot_go_back_to_the_hosts_network(network):
    """The way out a learner would try: join the test's own network namespace again (as a rank, with
    every capability dropped, as the worker drops them before the learner's code loads), directly or
    from a user namespace of its own, where it holds every capability."""
    if network.kind == "none":
        pytest.skip("no namespace can be made here, so there is none to leave")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, **network.env(), "PYTHONPATH": root}
    done = subprocess.run(netns.launch([sys.executable, "-c", ESCAPE, str(os.getpid())], env), env=env, cwd=root, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    tried = json.loads(done.stdout)
    # Refused at the open of the namespace's file or at the join (EACCES or EPERM), never joined.
    refused = {os.strerror(errno.EACCES), os.strerror(errno.EPERM)}
    assert tried["back to the host network"] in refused, tried
    assert tried["a user namespace, then back"] in refused or tried["a user namespace, then back"].startswith("no user namespace"), tried


def test_the_holder_outlives_the_judges_sweeps_until_closed():
    """Ending a worker kills every other process the judge started (autograder.osguard.kill_descendants):
    not the holder, which the ranks started after it still join. In a process of its own, so that the
    sweep reaches no process of the test's."""
    script = (
        "import json, os\n"
        "from autograder import netns, osguard\n"
        "network = netns.PrivateNetwork()\n"
        "osguard.kill_descendants(os.getpid())\n"
        "alive = network.process.poll() is None\n"
        "network.close()\n"
        "print(json.dumps([network.kind, alive, network.process.poll() is not None]))\n"
    )
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=root, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    kind, alive, ended = json.loads(done.stdout)
    assert ended and (alive or kind == "none")
