# kubesched as a container image: `docker build -t kubesched:latest .`
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release -p kubesched-cli --locked

FROM debian:bookworm-slim
COPY --from=build /src/target/release/kubesched /usr/local/bin/kubesched
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/kubesched"]
CMD ["run", "--help"]
