//! Compiles the etcd v3 protos the benchmark speaks (Lease, Lock, KV,
//! Maintenance) with the vendored protoc, so `cargo build` needs nothing but
//! cargo. The `etcd-client` crate compiles the same protos in its own build
//! script but needs a `protoc` on the machine, which a fresh one lacks.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto");
    tonic_prost_build::configure()
        .build_server(false)
        .compile_protos(
            &[
                "proto/etcdserverpb/rpc.proto",
                "proto/v3lockpb/v3lock.proto",
            ],
            &["proto"],
        )?;
    Ok(())
}
