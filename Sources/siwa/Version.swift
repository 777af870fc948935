/// The version of siwa: the only place it is written. `siwa --version` prints it, and the
/// Debian package takes its version from that.
let siwaVersion = "0.11.0~dev"
