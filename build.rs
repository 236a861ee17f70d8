//! Compiles the server stubs of the client API (`raftlock.v1`) with the
//! vendored protoc, so a fresh machine needs nothing but cargo. The
//! messages are the API crate's (`raftlock_api::pb`).

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/raftlock/v1/raftlock.proto");
    tonic_prost_build::configure()
        .build_client(false)
        .extern_path(".raftlock.v1", "::raftlock_api::pb")
        // A request that does not decode is INVALID_ARGUMENT, not INTERNAL.
        .codec_path("raftlock_raft::transport::message_codec::MessageCodec")
        .compile_protos(&["proto/raftlock/v1/raftlock.proto"], &["proto"])?;
    Ok(())
}
