"""What scripts/compose-check reads a container from: the Dockerfile's runtime stage, and compose's ports and
durations."""
import json
import re
import shlex
import socket


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def seconds(text, default):
    """A compose duration ("2s", "1m30s", "500ms") in seconds."""
    if text is None:
        return default
    total = 0.0
    for number, unit in re.findall(r"([\d.]+)(ms|s|m|h)", str(text)):
        total += float(number) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]
    return total


class Dockerfile:
    """The runtime stage of the Dockerfile: what a `build: .` container starts with."""

    def __init__(self, path):
        stage = open(path).read().replace("\\\n", " ").split("\nFROM ")[-1]
        self.workdir, self.env, self.user, self.copies = "/", {}, None, []
        self.entrypoint, self.cmd, self.healthcheck, self.uids = [], [], None, {}
        for line in stage.splitlines():
            words = line.strip().split(None, 1)
            if len(words) < 2:
                continue
            op, rest = words[0].upper(), words[1]
            if op == "WORKDIR":
                self.workdir = rest
            elif op == "ENV":
                self.env.update(dict(item.split("=", 1) for item in shlex.split(rest)))
            elif op == "USER":
                self.user = rest
            elif op == "COPY" and not rest.startswith("--from"):
                *sources, target = shlex.split(rest)
                self.copies += [(source, target) for source in sources]
            elif op == "ENTRYPOINT":
                self.entrypoint = json.loads(rest)
            elif op == "CMD":
                self.cmd = json.loads(rest)
            elif op == "HEALTHCHECK":
                self.healthcheck = json.loads(rest.split("CMD", 1)[1])
            elif op == "RUN":
                for name_uid in re.findall(r"useradd[^&;]*--uid (\d+) (\w+)", rest):
                    self.uids[name_uid[1]] = int(name_uid[0])
