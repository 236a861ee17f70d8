//! Compiles the messages and client stubs of `raftlock.v1`
//! (`raftlock/v1/raftlock.proto`, beside this file) with the vendored
//! protoc, so a fresh machine needs nothing but cargo. The server
//! generates its own stubs over these messages, with its own codec.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    let proto = "raftlock/v1/raftlock.proto";
    println!("cargo:rerun-if-changed={proto}");
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(&[proto], &["."])?;
    Ok(())
}
