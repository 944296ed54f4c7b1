"""Where `mvn verify` in java/ (run by ./test.sh) leaves the JVM artifacts: LANCE_HOST_JAVA_BUILD
names that Maven project (java/). The natives are inside the lance-host jar."""
import os
from pathlib import Path

import pytest


def java_root() -> Path:
    build = os.environ.get("LANCE_HOST_JAVA_BUILD")
    if not build:
        pytest.skip("LANCE_HOST_JAVA_BUILD is not set (./test.sh builds java/ with Maven and sets it)")
    return Path(build)


def _one(folder: Path, pattern: str) -> Path:
    found = [p for p in folder.glob(pattern) if not p.name.endswith(("-tests.jar", "-sources.jar"))]
    assert len(found) == 1, f"expected one {pattern} in {folder}, found {found} (run mvn package in java/)"
    return found[0]


def api_classpath() -> list:
    """The lance-host jar and the jars it needs at run time (Arrow Java), as a plain `java -cp` uses."""
    target = java_root() / "api" / "target"
    return [_one(target, "lance-host-[0-9]*.jar"), *sorted((target / "lib").glob("*.jar"))]


def spark_bundle() -> Path:
    """The Spark 4.x connector with lance-host, its natives and what Spark does not ship inside."""
    return _one(java_root() / "spark" / "spark-4.x_2.13" / "target", "lance-host-spark-4.x_2.13-*-bundle.jar")
