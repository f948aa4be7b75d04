#!/usr/bin/env python3
"""Build the project's container images locally with Podman, without any registry.

The project's machines have no Docker engine and reach no container registry
(spec/container-engine.md), so the real Apache Kafka brokers that the differential tests
compare the emulator with are built here from Debian's packages and Maven Central:

* ``localhost/rebalance-lab/jre17:bookworm`` - a Java runtime: ``debootstrap
  --variant=minbase --include=openjdk-17-jre-headless bookworm`` from the Debian mirror of
  the machine's apt sources, then ``podman import``. The rootfs tarball is cached under
  ``~/.cache/rebalance-lab/rootfs``.
* ``localhost/rebalance-lab/kafka:<version>-<recipe>`` for the latest Kafka 4.x and 3.9.x
  (:data:`KAFKA_RELEASES`) - the broker's jars fetched by Maven (``docker/kafka/pom.xml``,
  cached in ``~/.m2``) on the base image, started by ``docker/kafka/start-kafka.sh``. The
  ``<recipe>`` suffix is a hash of ``docker/kafka/``, so a changed recipe builds a new image.
  ``localhost/rebalance-lab/kafka:<version>`` names the newest build too.

* ``localhost/rebalance-lab/emulator:<version>-<recipe>`` (``--emulator``) - the emulator
  itself (``docker/emulator/``) in a venv on ``localhost/rebalance-lab/python3.11:bookworm``
  (debootstrap of ``python3-venv``, like the Java base). ``<recipe>`` hashes
  ``docker/emulator/`` and the project's source; the dependencies' wheels are fetched here
  with pip, so that pip in the image installs without a network.

Each image is built only when its tag is missing (``podman image exists``). One build runs
at a time on a machine (a file lock). Usage::

    python docker/build_images.py                # base + every Kafka image + the emulator's
    python docker/build_images.py --flavor 4     # base + Kafka 4.x only
    python docker/build_images.py --print-tags   # the tags, nothing built
    python docker/build_images.py --emulator     # Python base + the emulator's image only

Only the standard library is used, so that any Python 3.11 runs it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

DOCKER_DIR = Path(__file__).resolve().parent
KAFKA_RECIPE_DIR = DOCKER_DIR / "kafka"
CONTAINERS_CONF = DOCKER_DIR / "podman" / "containers.conf"
CACHE_DIR = Path(os.environ.get("REBALANCE_LAB_CACHE", Path.home() / ".cache" / "rebalance-lab"))

BASE_SUITE = "bookworm"
BASE_PACKAGES = ("openjdk-17-jre-headless",)
BASE_IMAGE = "localhost/rebalance-lab/jre17:bookworm"
KAFKA_REPOSITORY = "localhost/rebalance-lab/kafka"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
APT_PACKAGES = ("podman", "runc", "debootstrap")
# The recipe files whose content names the broker image (the hash in its tag).
KAFKA_RECIPE_FILES = ("Containerfile", "pom.xml", "start-kafka.sh", "log4j.properties", "log4j2.properties")

# The emulator's own image (docker/emulator/): the project in a venv on a Python base built
# like the Java one (python3-venv brings Debian's Python 3.11, venv, and pip through ensurepip).
REPO_ROOT = DOCKER_DIR.parent
EMULATOR_RECIPE_DIR = DOCKER_DIR / "emulator"
EMULATOR_RECIPE_FILES = ("Containerfile", "entrypoint.sh")
PYTHON_BASE_IMAGE = "localhost/rebalance-lab/python3.11:bookworm"
PYTHON_BASE_PACKAGES = ("python3-venv",)
# With a Docker engine (and a registry) the same recipe builds on the official Python image.
DOCKER_PYTHON_BASE_IMAGE = "python:3.11-slim-bookworm"
PYTHON_VERSION = "3.11"  # Debian bookworm's python3: the wheels fetched for the image are for it
EMULATOR_REPOSITORY = "localhost/rebalance-lab/emulator"
# What pip builds the emulator from; copied into the build context with the repository's layout.
PROJECT_FILES = ("pyproject.toml", "README.md", "LICENSE")  # LICENSE: pyproject's license-files
PROJECT_PACKAGE = "rebalance_lab"
# pip in the image installs from the wheels fetched beforehand into the context.
EMULATOR_PIP_OPTIONS = "--no-index --find-links /tmp/rebalance-lab/docker/emulator/wheels"


@dataclass(frozen=True)
class KafkaRelease:
    """One Apache Kafka release line that the tests run as a real broker."""

    flavor: str
    version: str
    logging: str  # the slf4j binding the release's own distribution ships: reload4j or log4j2
    official_image: str  # on a machine with a Docker engine (and a registry)


# The newest releases on Maven Central when this was written (maven-metadata.xml of
# org.apache.kafka:kafka_2.13): 4.4.0 is the latest 4.x, 3.9.2 the latest 3.9.x.
KAFKA_RELEASES: dict[str, KafkaRelease] = {
    "4": KafkaRelease("4", "4.4.0", "log4j2", "apache/kafka:4.4.0"),
    "3": KafkaRelease("3", "3.9.2", "reload4j", "apache/kafka:3.9.2"),
}


class BuildError(RuntimeError):
    """An image could not be built."""


def log(message: str) -> None:
    print(f"[build_images] {message}", file=sys.stderr, flush=True)


def podman_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("CONTAINERS_CONF", str(CONTAINERS_CONF))
    return env


def run(cmd: Sequence[str], *, quiet: bool = False, env: dict[str, str] | None = None) -> None:
    """Run a command; its output goes to stderr (or is kept and shown only on failure)."""
    if quiet:
        proc = subprocess.run(list(cmd), env=env or podman_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        returncode = proc.returncode
        if returncode != 0:
            sys.stderr.write(proc.stdout.decode(errors="replace")[-20000:])
    else:
        returncode = subprocess.run(list(cmd), env=env or podman_env(), stdout=sys.stderr, stderr=sys.stderr).returncode
    if returncode != 0:
        raise BuildError(f"command failed with exit code {returncode}: {' '.join(cmd)}")


def missing_tools() -> list[str]:
    return [p for p in APT_PACKAGES if shutil.which(p) is None and not Path("/usr/sbin", p).exists()]


def ensure_tools() -> None:
    """Install Podman, runc and debootstrap from Debian's packages when one is missing."""
    missing = missing_tools()
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise BuildError(f"missing {', '.join(missing)}: run apt-get install -y {' '.join(APT_PACKAGES)}")
    log(f"installing {' '.join(APT_PACKAGES)} (missing: {', '.join(missing)})")
    started = time.monotonic()
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-q"], quiet=True, env=env)
    run(["apt-get", "install", "-y", "-q", "--no-install-recommends", *APT_PACKAGES], quiet=True, env=env)
    log(f"installed in {time.monotonic() - started:.1f} s")


def image_exists(tag: str) -> bool:
    proc = subprocess.run(["podman", "image", "exists", tag], env=podman_env(), capture_output=True)
    return proc.returncode == 0


def image_size(tag: str) -> str:
    proc = subprocess.run(
        ["podman", "image", "inspect", "--format", "{{.Size}}", tag],
        env=podman_env(),
        capture_output=True,
        text=True,
    )
    try:
        return f"{int(proc.stdout.strip()) / 1e6:.0f} MB"
    except ValueError:
        return "?"


def debian_mirror() -> str:
    """The Debian mirror of the machine's apt sources (the first one serving BASE_SUITE)."""
    sources = Path("/etc/apt/sources.list.d")
    # deb822 files: "URIs:" and "Suites:" fields in one stanza.
    for path in sorted(sources.glob("*.sources")) if sources.is_dir() else []:
        for stanza in re.split(r"\n\s*\n", path.read_text(errors="replace")):
            fields: dict[str, str] = {
                m.group(1).lower(): m.group(2).strip()
                for m in re.finditer(r"^([A-Za-z-]+):[ \t]*(.*)$", stanza, re.MULTILINE)
            }
            if BASE_SUITE in fields.get("suites", "").split() and fields.get("uris"):
                return fields["uris"].split()[0].rstrip("/")
    # one-line format: deb [options] URI SUITE COMPONENTS...
    lists = [Path("/etc/apt/sources.list"), *sorted(sources.glob("*.list"))] if sources.is_dir() else []
    for path in lists:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            m = re.match(r"^\s*deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
            if m and m.group(2) == BASE_SUITE:
                return m.group(1).rstrip("/")
    return DEFAULT_MIRROR


def recipe_hash() -> str:
    digest = hashlib.sha256(BASE_IMAGE.encode())
    for name in KAFKA_RECIPE_FILES:
        digest.update(name.encode() + b"\0" + (KAFKA_RECIPE_DIR / name).read_bytes() + b"\0")
    return digest.hexdigest()[:10]


def kafka_image(flavor: str) -> str:
    """The tag of the locally built broker image of a flavor ("4" or "3")."""
    return f"{KAFKA_REPOSITORY}:{KAFKA_RELEASES[flavor].version}-{recipe_hash()}"


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """One image build at a time on this machine (2 shared cores)."""
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    with (CACHE_DIR / "build.lock").open("w") as lock:
        started = time.monotonic()
        fcntl.flock(lock, fcntl.LOCK_EX)
        waited = time.monotonic() - started
        if waited > 1:
            log(f"waited {waited:.1f} s for another build to finish")
        yield


def build_base(tag: str = BASE_IMAGE, packages: Sequence[str] = BASE_PACKAGES) -> None:
    if image_exists(tag):
        log(f"{tag}: present")
        return
    started = time.monotonic()
    rootfs_dir = CACHE_DIR / "rootfs"
    rootfs_dir.mkdir(parents=True, exist_ok=True)
    tarball = rootfs_dir / f"{BASE_SUITE}-minbase-{'-'.join(packages)}.tar"
    if tarball.is_file():
        log(f"reusing the cached rootfs {tarball}")
    else:
        mirror = debian_mirror()
        work = Path(tempfile.mkdtemp(prefix="debootstrap-", dir=rootfs_dir))
        try:
            log(f"debootstrap {BASE_SUITE} from {mirror} into {work}")
            run(
                [
                    "debootstrap",
                    "--variant=minbase",
                    f"--include={','.join(packages)}",
                    BASE_SUITE,
                    str(work),
                    mirror,
                ],
                quiet=True,
            )
            log(f"debootstrap done in {time.monotonic() - started:.1f} s")
            # Packages and lists are not needed in the image.
            for leftover in (work / "var/cache/apt/archives").glob("*.deb"):
                leftover.unlink()
            for leftover in (work / "var/lib/apt/lists").glob("*_*"):
                leftover.unlink()
            partial = tarball.with_suffix(".tar.partial")
            run(["tar", "--numeric-owner", "-C", str(work), "-cf", str(partial), "."])
            partial.rename(tarball)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    imported = time.monotonic()
    run(
        [
            "podman",
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["/bin/bash"]',
            str(tarball),
            tag,
        ],
        quiet=True,
    )
    log(f"podman import done in {time.monotonic() - imported:.1f} s")
    log(f"{tag}: built in {time.monotonic() - started:.1f} s ({image_size(tag)})")


def fetch_kafka_jars(release: KafkaRelease, libs: Path) -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise BuildError("mvn (Maven) is needed to fetch Kafka's jars from Maven Central")
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(KAFKA_RECIPE_DIR / "pom.xml"),
        f"-Dkafka.version={release.version}",
        f"-DoutputDirectory={libs}",
    ]
    if release.logging == "log4j2":
        cmd.append("-Dkafka.logging=log4j2")
    # The pom's build folder goes to the cache, not into the source tree.
    cmd += [f"-Dproject.build.directory={libs.parent / 'target'}", "dependency:copy-dependencies"]
    # Offline first: everything is in ~/.m2 after the first build on a machine.
    offline = subprocess.run([cmd[0], "-o", *cmd[1:]], capture_output=True)
    if offline.returncode == 0:
        return
    shutil.rmtree(libs, ignore_errors=True)
    run(cmd, quiet=True, env=dict(os.environ))


def remove_stale_kafka_images(release: KafkaRelease, keep: str) -> None:
    proc = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", KAFKA_REPOSITORY],
        env=podman_env(),
        capture_output=True,
        text=True,
    )
    for tag in proc.stdout.split():
        if tag.startswith(f"{KAFKA_REPOSITORY}:{release.version}-") and tag != keep:
            log(f"removing the outdated {tag}")
            subprocess.run(["podman", "rmi", tag], env=podman_env(), capture_output=True)


def build_kafka(flavor: str) -> str:
    release = KAFKA_RELEASES[flavor]
    tag = kafka_image(flavor)
    if image_exists(tag):
        log(f"{tag}: present")
        return tag
    started = time.monotonic()
    context = CACHE_DIR / "build" / f"kafka-{release.version}"
    shutil.rmtree(context, ignore_errors=True)
    context.mkdir(parents=True)
    try:
        fetch_kafka_jars(release, context / "libs")
        jars = len(list((context / "libs").glob("*.jar")))
        log(f"Kafka {release.version}: {jars} jars from Maven in {time.monotonic() - started:.1f} s")
        for name in KAFKA_RECIPE_FILES:
            shutil.copy2(KAFKA_RECIPE_DIR / name, context / name)
        (context / "start-kafka.sh").chmod(0o755)
        built = time.monotonic()
        run(
            [
                "podman",
                "build",
                "--pull=never",
                "--layers=false",
                "--build-arg",
                f"BASE_IMAGE={BASE_IMAGE}",
                "--build-arg",
                f"KAFKA_VERSION={release.version}",
                "-t",
                tag,
                "-f",
                str(context / "Containerfile"),
                str(context),
            ],
            quiet=True,
        )
        run(["podman", "tag", tag, f"{KAFKA_REPOSITORY}:{release.version}"], quiet=True)
        log(f"podman build done in {time.monotonic() - built:.1f} s")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    remove_stale_kafka_images(release, tag)
    log(f"{tag}: built in {time.monotonic() - started:.1f} s ({image_size(tag)})")
    return tag


def build(flavors: Sequence[str] = tuple(KAFKA_RELEASES)) -> dict[str, str]:
    """Build the base image and the broker images of ``flavors`` when missing; flavor -> tag."""
    unknown = [f for f in flavors if f not in KAFKA_RELEASES]
    if unknown:
        raise BuildError(f"unknown flavor(s) {unknown}; known: {sorted(KAFKA_RELEASES)}")
    started = time.monotonic()
    ensure_tools()
    tags: dict[str, str] = {}
    with build_lock():
        if not all(image_exists(kafka_image(f)) for f in flavors):
            build_base()
        for flavor in flavors:
            tags[flavor] = build_kafka(flavor)
    log(f"images ready in {time.monotonic() - started:.1f} s")
    return tags


# -- the emulator's image ------------------------------------------------------------------


def project_files() -> list[Path]:
    """The files pip builds the project from, relative to the repository (no byte code)."""
    package = [
        path.relative_to(REPO_ROOT)
        for path in (REPO_ROOT / PROJECT_PACKAGE).rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    ]
    return [Path(name) for name in PROJECT_FILES] + sorted(package)


def project_metadata() -> dict[str, object]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)


def project_version() -> str:
    """``rebalance_lab.__version__``, the one source pyproject reads (``dynamic = ["version"]``), without importing."""
    source = (REPO_ROOT / PROJECT_PACKAGE / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', source, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"no __version__ line in {PROJECT_PACKAGE}/__init__.py")
    return match.group(1)


def emulator_recipe_hash() -> str:
    """A hash of the Python base's tag, docker/emulator/ and the project's source."""
    digest = hashlib.sha256(PYTHON_BASE_IMAGE.encode())
    for name in EMULATOR_RECIPE_FILES:
        digest.update(name.encode() + b"\0" + (EMULATOR_RECIPE_DIR / name).read_bytes() + b"\0")
    for path in project_files():
        digest.update(path.as_posix().encode() + b"\0" + (REPO_ROOT / path).read_bytes() + b"\0")
    return digest.hexdigest()[:10]


def emulator_image() -> str:
    """The tag of the locally built emulator image (changes with its recipe and the source)."""
    return f"{EMULATOR_REPOSITORY}:{project_version()}-{emulator_recipe_hash()}"


def wheel_platforms() -> list[str]:
    """pip --platform values that bookworm's glibc (2.36) runs; pip does not widen them itself."""
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(os.uname().machine.lower(), os.uname().machine)
    legacy = [f"manylinux2014_{arch}"] + ([f"manylinux2010_{arch}", f"manylinux1_{arch}"] if arch == "x86_64" else [])
    return [f"manylinux_2_{minor}_{arch}" for minor in range(36, 4, -1)] + legacy


def fetch_emulator_wheels(dest: Path) -> None:
    """The project's dependencies and build requirements as wheels for the image's Python.

    Fetched here, through the machine's pip configuration (its index, proxy and certificates),
    so that pip in the image installs with ``--no-index``.
    """
    meta = project_metadata()
    project, build_system = meta["project"], meta["build-system"]
    assert isinstance(project, dict) and isinstance(build_system, dict)
    requirements = [str(r) for r in (*project.get("dependencies", []), *build_system.get("requires", []))]
    abi = "cp" + PYTHON_VERSION.replace(".", "")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--dest",
        str(dest),
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        abi,
    ]
    for platform in wheel_platforms():
        cmd += ["--platform", platform]
    run([*cmd, *requirements], quiet=True, env=dict(os.environ))


def prepare_emulator_context(context: Path) -> None:
    """The build context: the project's files in the repository's layout, docker/emulator/ and its wheels."""
    for path in project_files():
        (context / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / path, context / path)
    recipe = context / "docker" / "emulator"
    recipe.mkdir(parents=True, exist_ok=True)
    for name in EMULATOR_RECIPE_FILES:
        shutil.copy2(EMULATOR_RECIPE_DIR / name, recipe / name)
    (recipe / "entrypoint.sh").chmod(0o755)
    fetch_emulator_wheels(recipe / "wheels")


def remove_stale_emulator_images(keep: str) -> None:
    proc = subprocess.run(
        ["podman", "images", "--format", "{{.Repository}}:{{.Tag}}", EMULATOR_REPOSITORY],
        env=podman_env(),
        capture_output=True,
        text=True,
    )
    for tag in proc.stdout.split():
        if tag.startswith(f"{EMULATOR_REPOSITORY}:") and re.search(r"-[0-9a-f]{10}$", tag) and tag != keep:
            log(f"removing the outdated {tag}")
            subprocess.run(["podman", "rmi", tag], env=podman_env(), capture_output=True)


def _build_emulator_image(tag: str) -> None:
    started = time.monotonic()
    context = CACHE_DIR / "build" / "emulator"
    shutil.rmtree(context, ignore_errors=True)
    context.mkdir(parents=True)
    try:
        prepare_emulator_context(context)
        wheels = sorted(p.name for p in (context / "docker" / "emulator" / "wheels").glob("*.whl"))
        log(f"emulator: {len(wheels)} wheels in {time.monotonic() - started:.1f} s ({', '.join(wheels)})")
        built = time.monotonic()
        run(
            [
                "podman",
                "build",
                "--pull=never",
                "--layers=false",
                "--build-arg",
                f"BASE_IMAGE={PYTHON_BASE_IMAGE}",
                "--build-arg",
                f"EMULATOR_VERSION={project_version()}",
                "--build-arg",
                f"PIP_INSTALL_OPTIONS={EMULATOR_PIP_OPTIONS}",
                "-t",
                tag,
                "-f",
                str(context / "docker" / "emulator" / "Containerfile"),
                str(context),
            ],
            quiet=True,
        )
        run(["podman", "tag", tag, f"{EMULATOR_REPOSITORY}:{project_version()}"], quiet=True)
        log(f"podman build done in {time.monotonic() - built:.1f} s")
    finally:
        shutil.rmtree(context, ignore_errors=True)
    remove_stale_emulator_images(tag)
    log(f"{tag}: built in {time.monotonic() - started:.1f} s ({image_size(tag)})")


def build_emulator() -> str:
    """Build the Python base and the emulator's image when missing; the emulator image's tag."""
    started = time.monotonic()
    ensure_tools()
    tag = emulator_image()
    with build_lock():
        if image_exists(tag):
            log(f"{tag}: present")
        else:
            build_base(PYTHON_BASE_IMAGE, PYTHON_BASE_PACKAGES)
            _build_emulator_image(tag)
    log(f"emulator image ready in {time.monotonic() - started:.1f} s")
    return tag


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--flavor",
        action="append",
        choices=sorted(KAFKA_RELEASES),
        help="Kafka release line to build (repeatable; default: all)",
    )
    parser.add_argument("--print-tags", action="store_true", help="print the image tags and build nothing")
    parser.add_argument(
        "--emulator",
        action="store_true",
        help="build the emulator's image (docker/emulator/): alone, only it; with --flavor, those Kafka images too "
        "(default, without --flavor and --emulator: every image)",
    )
    args = parser.parse_args(argv)
    everything = not args.flavor and not args.emulator
    flavors: list[str] = args.flavor or ([] if args.emulator else list(KAFKA_RELEASES))
    args.emulator = args.emulator or everything
    if args.print_tags:
        if flavors:
            print(BASE_IMAGE)
        for flavor in flavors:
            print(kafka_image(flavor))
        if args.emulator:
            print(PYTHON_BASE_IMAGE)
            print(emulator_image())
        return 0
    try:
        tags = build(flavors) if flavors else {}
        emulator = build_emulator() if args.emulator else None
    except BuildError as exc:
        log(f"FAILED: {exc}")
        return 1
    for flavor, tag in tags.items():
        print(f"kafka{flavor}={tag}")
    if emulator is not None:
        print(f"emulator={emulator}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
