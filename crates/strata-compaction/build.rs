//! Compiles `proto/compaction.proto` with protox (pure Rust: no `protoc` needed).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/compaction.proto";
    println!("cargo:rerun-if-changed={proto}");
    let fds = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(fds)?;
    Ok(())
}
