# The twinscale controller image: `twinscale` (controller, replay, simulate) on Debian bookworm.
#
# Stage 1 builds with the Debian packages hack/setup.sh installs (those the binary needs; the
# test-only ones, GoogleTest, Google Benchmark, Prometheus, Chromium, Go, are left out with the
# tests). Stage 2 is bookworm-slim with only the shared libraries the binary links (ldd:
# abseil, cpprestsdk, gRPC, Protobuf, yaml-cpp, OpenSSL; their own dependencies come with them)
# and CA certificates, running as the non-root user 65532 that the chart's securityContext
# names. The binary needs no files at run time: the profiles and the CRD are compiled in.
#
#   docker build -t twinscale:dev .   # then push it where the cluster pulls from
#
# Not built in CI (the development machines have no container engine): see README.md, "Image".

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libabsl-dev libyaml-cpp-dev nlohmann-json3-dev \
      libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev libcpprest-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTWINSCALE_BUILD_TESTS=OFF -DTWINSCALE_BUILD_BENCH=OFF \
 && ninja -C /build twinscale \
 && strip /build/controller/twinscale

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates libabsl20220623 libcpprest2.10 libgrpc++1.51 libprotobuf32 \
      libyaml-cpp0.7 libssl3 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/controller/twinscale /usr/local/bin/twinscale
# What `twinscale replay` reads when given no policy or trace (controller/cli/shipped_data.h).
COPY --from=build /src/deploy/samples /usr/local/share/twinscale/deploy/samples
COPY --from=build /src/tests/data/traces/AzureLLMInferenceTrace_conv.csv \
     /usr/local/share/twinscale/tests/data/traces/
# Fails the build if a shared library is missing.
RUN /usr/local/bin/twinscale version
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/twinscale"]
CMD ["controller"]
