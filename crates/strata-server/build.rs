//! Builds `csrc/redis_float.c`: redis's long-double arithmetic and float printing through the
//! C library, so float replies match redis-server byte for byte (see `src/redis_float.rs`).

fn main() {
    println!("cargo:rerun-if-changed=csrc/redis_float.c");
    cc::Build::new()
        .file("csrc/redis_float.c")
        .warnings(true)
        .extra_warnings(true)
        .flag_if_supported("-Werror=implicit-function-declaration")
        .compile("strata_redis_float");
}
