# syntax=docker/dockerfile:1
# lmzoo container images.
#
#   CPU (default, Debian 12 + Debian's LibTorch 1.13; the tests run during the build):
#     docker build -t lmzoo .
#     docker run --rm -v "$PWD/runs:/runs" lmzoo train --help
#
#   CUDA (official LibTorch 2.x CUDA build on an nvidia/cuda image; tests not built):
#     docker build --target cuda -t lmzoo:cuda .
#     docker build --target cuda --build-arg LIBTORCH_URL=<other libtorch zip> -t lmzoo:cuda .
#     docker build --target cuda --build-arg CUDA_ARCHITECTURES="80;90" -t lmzoo:cuda .
#     docker run --rm --gpus all lmzoo:cuda bench --help
#   The LibTorch zip must be a cxx11-ABI build (Ubuntu's sentencepiece uses that ABI) whose
#   CUDA version matches CUDA_DEVEL_IMAGE. The build is docs/building.md's "official zip" one
#   (tools/build.sh with -DCMAKE_PREFIX_PATH and -DCMAKE_CUDA_ARCHITECTURES). Without Docker or a
#   GPU, tools/cuda_build_check.sh compiles the same sources, CUDA and NCCL paths included, against
#   Debian 13's CUDA LibTorch and runs the CPU suite on it.
#
# Build with BuildKit (the default since Docker 23): it builds only the stages the chosen
# target needs, so the default CPU build never downloads the CUDA images.

ARG CUDA_DEVEL_IMAGE=nvidia/cuda:12.6.3-cudnn-devel-ubuntu24.04
ARG CUDA_RUNTIME_IMAGE=nvidia/cuda:12.6.3-runtime-ubuntu24.04

# --- cuda-build: compiles lmzoo against the official CUDA LibTorch zip the way the README documents
# (tools/build.sh -DCMAKE_PREFIX_PATH=/opt/libtorch/share/cmake). LibTorch's CMake config needs nvcc;
# lmzoo itself has no CUDA sources. The build has no GPU, so "native" cannot be used:
# CUDA_ARCHITECTURES names the targets. The tests are not built here: the image build has no GPU
# to run the [cuda] cases on (tools/gpu_check.sh builds and runs them on a GPU machine).
FROM ${CUDA_DEVEL_IMAGE} AS cuda-build
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu126/libtorch-cxx11-abi-shared-with-deps-2.6.0%2Bcu126.zip
ARG CUDA_ARCHITECTURES=90
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      g++ cmake make pkg-config ca-certificates curl unzip \
      libsentencepiece-dev nlohmann-json3-dev libcxxopts-dev libonig-dev libutf8proc-dev \
 && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL -o /tmp/libtorch.zip "${LIBTORCH_URL}" \
 && unzip -q /tmp/libtorch.zip -d /opt \
 && rm /tmp/libtorch.zip
WORKDIR /opt/lmzoo
COPY . .
RUN LMZOO_SKIP_APT=1 bash tools/build.sh /opt/lmzoo/build \
      -DCMAKE_PREFIX_PATH=/opt/libtorch/share/cmake \
      -DCMAKE_CUDA_ARCHITECTURES="${CUDA_ARCHITECTURES}" \
      -DLMZOO_BUILD_TESTS=OFF

# --- cuda: runtime image with the binary and LibTorch's libraries (the "with-deps" zip
# bundles cuDNN, cuBLAS and NCCL); run with `--gpus all`.
FROM ${CUDA_RUNTIME_IMAGE} AS cuda
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libsentencepiece0 libonig5 libutf8proc3 libgomp1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=cuda-build /opt/libtorch/lib /opt/libtorch/lib
COPY --from=cuda-build /opt/lmzoo/build/lmzoo /opt/lmzoo/build/liblmzoo_spm.so /opt/lmzoo/build/
ENV LD_LIBRARY_PATH=/opt/libtorch/lib:${LD_LIBRARY_PATH}
WORKDIR /work
ENTRYPOINT ["/opt/lmzoo/build/lmzoo"]
CMD ["--help"]

# --- deps: Debian 12 with every package lmzoo needs (build, test, demo), installed by the
# same script developers use. Only the script is copied, so this layer survives source edits.
FROM debian:bookworm AS deps
COPY tools/setup_deps.sh /tmp/setup_deps.sh
RUN bash /tmp/setup_deps.sh all \
 && rm -rf /var/lib/apt/lists/* /tmp/setup_deps.sh

# --- cpu (default target): builds Release against Debian's LibTorch 1.13 and runs the
# whole test suite; a failing test fails the image build.
FROM deps AS cpu
ENV CCACHE_DISABLE=1
WORKDIR /opt/lmzoo
COPY . .
RUN bash tools/build.sh /opt/lmzoo/build \
 && ctest --test-dir /opt/lmzoo/build --output-on-failure -j2
WORKDIR /work
ENTRYPOINT ["/opt/lmzoo/build/lmzoo"]
CMD ["--help"]
