//! Compiles the peer API with the vendored protoc, so a fresh machine needs
//! nothing but cargo.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/peer.proto");
    tonic_prost_build::configure()
        .codec_path("crate::transport::message_codec::MessageCodec")
        .compile_protos(&["proto/peer.proto"], &["proto"])?;
    Ok(())
}
