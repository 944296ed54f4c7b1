#!/usr/bin/env bash
# Install what a fresh Debian machine with only the Rust toolchain lacks: protoc, cmake,
# pkg-config, a C/C++ compiler, valgrind, and for the tests the Python packages (pyarrow,
# pytest, moto[server], pylance, duckdb, pyspark, ray) and a Java runtime for Spark.
set -euo pipefail

need=()
command -v protoc >/dev/null || need+=(protobuf-compiler)
command -v cmake >/dev/null || need+=(cmake)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v cc >/dev/null || need+=(gcc)
command -v c++ >/dev/null || need+=(g++)
command -v valgrind >/dev/null || need+=(valgrind)
command -v make >/dev/null || need+=(make)
command -v curl >/dev/null || need+=(curl ca-certificates)
# Spark (tests/python/test_spark.py) runs on a JVM: Debian 12's default runtime is Java 17.
# The Java API and Spark connectors (java/) are built by Maven with Debian's OpenJDK 17; Maven
# resolves everything else (JUnit, Spark, Arrow Java) from Maven Central into ~/.m2.
if [ "${LANCE_HOST_NEED_PYTHON:-0}" = 1 ]; then
  command -v java >/dev/null || need+=(default-jre-headless)
  javac_home=""
  if command -v javac >/dev/null; then javac_home="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"; fi
  [ -n "$javac_home" ] && [ -f "$javac_home/include/jni.h" ] || need+=(openjdk-17-jdk-headless)
  command -v mvn >/dev/null || need+=(maven)
fi

if ((${#need[@]})); then
  echo "==> installing ${need[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

if [ "${LANCE_HOST_NEED_PYTHON:-0}" = 1 ]; then
  # pyarrow + pytest for the ctypes test; moto[server] is the S3-compatible server the
  # Rust tests start on 127.0.0.1; pylance writes the tables of another writer that the Python
  # tests read through lance-host.
  # duckdb (the Python package) loads the lance-host DuckDB extension in the tests.
  # pyspark and ray[data] run the Spark and Ray tests (pandas pinned below 3 for both).
  # jieba ships the Chinese dictionary the full-text tests lay out for Lance's jieba tokenizer.
  # adbc-driver-manager loads the ADBC driver (liblance_host_adbc.so) as ADBC clients do, and the
  # substrait package writes the Substrait plans its tests send; polars and daft run
  # lance_host.polars and lance_host.daft.
  if ! python3 -c "import pyarrow, pytest, moto.server, flask, flask_cors, lance, duckdb, pyspark, ray.data, jieba, adbc_driver_manager, substrait.proto, polars, daft" 2>/dev/null ||
     [ "$(python3 -c 'import lance; print(lance.__version__)' 2>/dev/null)" != "14.0.2" ] ||
     [ "$(python3 -c 'import duckdb; print(duckdb.__version__)' 2>/dev/null)" != "2.0.0" ] ||
     [ "$(python3 -c 'import pyspark; print(pyspark.__version__)' 2>/dev/null)" != "4.1.1" ] ||
     [ "$(python3 -c 'import ray; print(ray.__version__)' 2>/dev/null)" != "2.52.1" ] ||
     [ "$(python3 -c 'import polars; print(polars.__version__)' 2>/dev/null)" != "2.1.0" ] ||
     [ "$(python3 -c 'import daft; print(daft.__version__)' 2>/dev/null)" != "0.7.26" ]; then
    echo "==> installing Python packages pyarrow, pytest, moto[server], pylance 14.0.2, duckdb 2.0.0, pyspark 4.1.1, ray[data] 2.52.1, adbc-driver-manager 1.13.0, substrait 0.37.1, polars 2.1.0, daft 0.7.26"
    pkgs=(pyarrow pytest "moto[server]" "pylance==14.0.2" "duckdb==2.0.0" "pyspark==4.1.1" "ray[data]==2.52.1" "pandas==2.3.3" "jieba==0.42.1" "adbc-driver-manager==1.13.0" "substrait==0.37.1" "polars==2.1.0" "tqdm==4.67.3")
    if ! python3 -m pip --version >/dev/null 2>&1; then
      sudo=""
      if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
      $sudo apt-get update -qq
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-pip >/dev/null
    fi
    # Debian's own python3 is "externally managed"; a pyenv/venv python is not.
    python3 -m pip install -q "${pkgs[@]}" ||
      python3 -m pip install -q --break-system-packages "${pkgs[@]}"
    # daft 0.7.26 declares pyarrow < 26, which would take pyarrow back a major version for every
    # test; installed without its dependencies (tqdm is in the list above, packaging and
    # typing-extensions come with pytest and pydantic) it passes tests/python/test_daft.py on the
    # pyarrow the others resolve.
    python3 -m pip install -q --no-deps "daft==0.7.26" ||
      python3 -m pip install -q --no-deps --break-system-packages "daft==0.7.26"
  fi
fi
