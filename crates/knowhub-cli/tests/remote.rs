//! `knowhub --server … --api-key …`: commands run on a team server through its HTTP API, with
//! the permissions the server gives that key (real processes: `knowhub serve` and the CLI).

#![allow(clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

fn knowhub(data: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_knowhub"));
    c.env_remove("KNOWHUB_API_KEY")
        .env_remove("KNOWHUB_DATABASE_URL")
        .env_remove("KNOWHUB_SERVER")
        .arg("--data-dir")
        .arg(data)
        .args(["--embedder", "off"]);
    c
}

fn api_key(printed: &str) -> String {
    printed
        .split(|c: char| c.is_whitespace() || c == '"')
        .find(|w| w.starts_with("kh_"))
        .unwrap()
        .to_owned()
}

fn fails(o: Output) -> String {
    assert!(
        !o.status.success(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn commands_run_on_the_server_under_the_keys_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("server");
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(docs.join("public")).unwrap();
    std::fs::create_dir_all(docs.join("hr")).unwrap();
    std::fs::write(
        docs.join("public/handbook.md"),
        "# Handbook\n\nEmployees get fifteen days of annual leave per year.",
    )
    .unwrap();
    std::fs::write(
        docs.join("hr/salaries.md"),
        "# Salaries\n\nThe confidential salary band for engineers is 90k to 120k.",
    )
    .unwrap();
    ok(knowhub(&data).arg("ingest").arg(&docs).output().unwrap());
    ok(knowhub(&data)
        .args(["acl", "set"])
        .arg(docs.join("public"))
        .arg("public")
        .output()
        .unwrap());
    ok(knowhub(&data)
        .args(["acl", "set"])
        .arg(docs.join("hr"))
        .arg("team:hr")
        .output()
        .unwrap());
    let out = ok(knowhub(&data)
        .args(["user", "add", "alice"])
        .output()
        .unwrap());
    let key = api_key(&out);
    let boss = api_key(&ok(knowhub(&data)
        .args(["user", "add", "boss", "--role", "ADMIN"])
        .output()
        .unwrap()));

    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let _server = Server(
        knowhub(&data)
            .args([
                "serve",
                "--no-watch",
                "--bind",
                &format!("127.0.0.1:{port}"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    // The CLI on "another machine": an empty data directory of its own.
    let elsewhere = dir.path().join("laptop");
    let remote = |args: &[&str]| {
        knowhub(&elsewhere)
            .args(["--server", &url, "--api-key", &key])
            .args(args)
            .output()
            .unwrap()
    };
    let start = Instant::now();
    while !remote(&["status"]).status.success() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the server starts"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let found = ok(remote(&["search", "annual leave"]));
    assert!(found.contains("handbook.md"), "{found}");
    let hidden = ok(remote(&["search", "salary band"]));
    assert!(!hidden.contains("salaries"), "{hidden}");
    let listed = ok(remote(&["list"]));
    assert!(
        listed.contains("handbook.md") && !listed.contains("salaries"),
        "{listed}"
    );
    let answer = ok(remote(&[
        "ask",
        "How many days of annual leave do employees get?",
    ]));
    assert!(answer.contains("fifteen"), "{answer}");
    assert!(answer.contains("[1] Handbook"), "{answer}");
    let sessions = ok(remote(&["sessions"]));
    assert!(sessions.contains("sess-"), "{sessions}");

    // A document by its path on the server (the "open source" of a citation), never a
    // restricted one.
    let handbook = docs.join("public/handbook.md").canonicalize().unwrap();
    let shown = ok(remote(&["show", handbook.to_str().unwrap()]));
    assert!(
        shown.contains("Handbook") && shown.contains("fifteen days"),
        "{shown}"
    );
    let salaries = docs.join("hr/salaries.md").canonicalize().unwrap();
    let refused = fails(remote(&["show", salaries.to_str().unwrap()]));
    assert!(refused.contains("no document you may read"), "{refused}");

    // Refusals that say what to do.
    let wrong_key = knowhub(&elsewhere)
        .args(["--server", &url, "--api-key", "kh_nope", "search", "leave"])
        .output()
        .unwrap();
    assert!(!wrong_key.status.success());
    assert!(
        String::from_utf8_lossy(&wrong_key.stderr).contains("UNAUTHENTICATED"),
        "{}",
        String::from_utf8_lossy(&wrong_key.stderr)
    );
    let plain = knowhub(&elsewhere)
        .args([
            "--server",
            "http://kb.example.com",
            "--api-key",
            &key,
            "status",
        ])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stderr).contains("https://"));
    let unsupported = remote(&["reindex"]);
    assert!(!unsupported.status.success());
    assert!(
        String::from_utf8_lossy(&unsupported.stderr).contains("runs search, ask"),
        "{}",
        String::from_utf8_lossy(&unsupported.stderr)
    );

    // Files from this computer reach the server only when sent: into alice's uploads there,
    // a folder's files without its hidden ones.
    let mine = dir.path().join("laptop-files");
    std::fs::create_dir_all(mine.join(".git")).unwrap();
    std::fs::write(
        mine.join("trip.md"),
        "# Trip\n\nThe lighthouse trip leaves from pier nine.",
    )
    .unwrap();
    std::fs::write(mine.join(".git/config"), "lighthouse secrets").unwrap();
    let sent = ok(remote(&["upload", mine.to_str().unwrap(), "--to", "trips"]));
    assert!(
        sent.contains("added") && sent.contains("trips") && sent.contains("sent 1 file(s)"),
        "{sent}"
    );
    let found = ok(remote(&["search", "lighthouse pier"]));
    assert!(found.contains("trip.md"), "{found}");
    assert!(
        fails(remote(&["upload", "/nonexistent/file.md"]))
            .contains("cannot read /nonexistent/file.md")
    );

    // Administration on the server with an administrator's key: users, groups, ACLs, web
    // sources. Folders are named by their paths on the server.
    let admin = |args: &[&str]| {
        knowhub(&elsewhere)
            .args(["--server", &url, "--api-key", &boss])
            .args(args)
            .output()
            .unwrap()
    };
    let users = ok(admin(&["user", "list"]));
    assert!(users.contains("alice") && users.contains("boss"), "{users}");
    let carol = api_key(&ok(admin(&["user", "add", "carol", "--json"])));
    let as_carol = |args: &[&str]| {
        knowhub(&elsewhere)
            .args(["--server", &url, "--api-key", &carol])
            .args(args)
            .output()
            .unwrap()
    };
    assert!(!ok(as_carol(&["search", "salary band"])).contains("salaries"));
    ok(admin(&["user", "join", "carol", "team:hr"]));
    assert!(ok(as_carol(&["search", "salary band"])).contains("salaries"));
    ok(admin(&["user", "leave", "carol", "team:hr"]));
    assert!(!ok(as_carol(&["search", "salary band"])).contains("salaries"));
    let hr = docs.join("hr").canonicalize().unwrap();
    let hr = hr.to_str().unwrap();
    let who = ok(admin(&["acl", "show", hr]));
    assert!(
        who.contains("alice") && who.contains("reads 0 of 1"),
        "{who}"
    );
    let set = ok(admin(&["acl", "set", hr, "team:hr", "user:carol"]));
    assert!(set.contains("user:carol"), "{set}");
    assert!(ok(as_carol(&["search", "salary band"])).contains("salaries"));
    ok(admin(&["acl", "set", hr, "team:hr"]));
    assert!(!ok(as_carol(&["search", "salary band"])).contains("salaries"));
    ok(admin(&["user", "set-role", "carol", "ADMIN"]));
    let users = ok(admin(&["user", "list"]));
    assert!(
        users
            .lines()
            .any(|l| l.starts_with("carol") && l.contains("ADMIN")),
        "{users}"
    );
    let rotated = api_key(&ok(admin(&["user", "rotate-key", "carol"])));
    assert!(fails(as_carol(&["status"])).contains("UNAUTHENTICATED"));
    assert_ne!(rotated, carol);
    ok(admin(&["user", "remove", "carol"]));
    assert!(!ok(admin(&["user", "list"])).contains("carol"));
    // A user may not administer.
    assert!(fails(remote(&["user", "add", "mallory"])).contains("PERMISSION_DENIED"));
    // A folder she may not read is not there for her at all.
    let refused = fails(remote(&["acl", "set", hr, "public"]));
    assert!(refused.contains("NOT_FOUND"), "{refused}");
    assert!(!ok(remote(&["search", "salary band"])).contains("salaries"));

    // A web source on the server: added, listed, changed, run (the site is unreachable, so the
    // run concludes nothing and says so), removed.
    let site = "http://127.0.0.1:9/wiki/";
    let added = ok(admin(&[
        "crawl", "add", site, "--depth", "2", "--every", "6h",
    ]));
    assert!(added.contains("added web source"), "{added}");
    let listed = ok(admin(&["crawl", "list"]));
    assert!(
        listed.contains(site) && listed.contains("depth 2, every 6h"),
        "{listed}"
    );
    let changed = ok(admin(&["crawl", "set", site, "--every", "never"]));
    assert!(changed.contains("depth 2, by hand"), "{changed}");
    let run = admin(&["crawl", "run", site]);
    assert_eq!(run.status.code(), Some(1), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stdout).contains("not crawled"),
        "{run:?}"
    );
    assert!(fails(remote(&["crawl", "list"])).contains("PERMISSION_DENIED"));
    let removed = ok(admin(&["crawl", "remove", site]));
    assert!(removed.contains("removed"), "{removed}");
    assert!(ok(admin(&["crawl", "list"])).contains("no web sources"));

    // The server's own folders and queue: an administrator ingests a folder on the server,
    // watches and unwatches it, lists the jobs and the audit trail, and removes documents; a
    // user may do none of that.
    let projects = docs.join("projects");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(
        projects.join("atlas.md"),
        "# Atlas\n\nProject Atlas ships the harbour crane software in May.",
    )
    .unwrap();
    let projects = projects.canonicalize().unwrap();
    let projects = projects.to_str().unwrap();
    let ingested = ok(admin(&["ingest", projects]));
    assert!(
        ingested.contains("added") && ingested.contains("atlas.md"),
        "{ingested}"
    );
    assert!(ok(admin(&["search", "harbour crane"])).contains("atlas.md"));
    assert!(fails(remote(&["ingest", projects])).contains("PERMISSION_DENIED"));
    let watched = ok(admin(&["watch", projects, "--exclude", "*.tmp"]));
    assert!(watched.contains("watching"), "{watched}");
    let listed = ok(admin(&["watch", "--list", "--json"]));
    assert!(
        listed.contains(projects) && listed.contains("*.tmp"),
        "{listed}"
    );
    let jobs = ok(admin(&["jobs"]));
    assert!(jobs.contains("queued") && jobs.contains("done"), "{jobs}");
    ok(admin(&["jobs", "pause"]));
    assert!(ok(admin(&["jobs"])).contains("PAUSED"));
    ok(admin(&["jobs", "resume"]));
    assert!(fails(remote(&["jobs", "pause"])).contains("PERMISSION_DENIED"));
    ok(admin(&["unwatch", projects]));
    assert!(!ok(admin(&["watch", "--list"])).contains(projects));
    let trail = ok(admin(&["audit", "-n", "500"]));
    assert!(trail.contains("alice") && trail.contains("boss"), "{trail}");
    let own = ok(remote(&["audit", "-n", "500"]));
    assert!(own.contains("alice") && !own.contains(" boss "), "{own}");
    assert!(fails(remote(&["remove", projects])).contains("NOT_FOUND"));
    let removed = ok(admin(&["remove", projects]));
    assert!(removed.contains("removed 1 document"), "{removed}");
    assert!(!ok(admin(&["search", "harbour crane"])).contains("atlas.md"));
    assert!(
        docs.join("projects/atlas.md").exists(),
        "the server's file stays"
    );

    // Group spaces on the server: alice makes one and shares it with boss, then deletes it.
    let made = ok(remote(&[
        "group",
        "create",
        "trip-crew",
        "--name",
        "Trip crew",
    ]));
    assert!(
        made.contains("trip-crew") && made.contains("you: owner"),
        "{made}"
    );
    let added = ok(remote(&[
        "group",
        "add",
        "trip-crew",
        "boss",
        "--role",
        "readonly",
    ]));
    assert!(added.contains("boss is readonly of trip-crew"), "{added}");
    let shown = ok(remote(&["group", "show", "trip-crew", "--json"]));
    assert!(
        shown.contains("\"readonly\"") && shown.contains("\"boss\""),
        "{shown}"
    );
    assert!(ok(admin(&["group", "list"])).contains("trip-crew"));
    ok(remote(&["group", "remove", "trip-crew", "boss"]));
    assert!(!ok(remote(&["group", "show", "trip-crew"])).contains("boss"));
    let deleted = ok(remote(&["group", "delete", "trip-crew"]));
    assert!(deleted.contains("deleted group trip-crew"), "{deleted}");
    assert!(fails(remote(&["group", "show", "trip-crew"])).contains("NOT_FOUND"));

    // Knowledge items, resources and memories on the server: alice's own (memories are never
    // shared, administrators included).
    let saved = ok(remote(&[
        "knowledge",
        "save",
        "Run the canary for an hour before a full rollout.",
        "--type",
        "strategy",
        "--task",
        "deploy a release",
    ]));
    let item = saved.trim().strip_prefix("saved ").unwrap().to_owned();
    let found = ok(remote(&[
        "knowledge",
        "search",
        "canary rollout",
        "--min-score",
        "1",
    ]));
    assert!(
        found.contains(&item) && found.contains("| Run the canary"),
        "{found}"
    );
    let updated = ok(remote(&[
        "knowledge",
        "update",
        &item,
        "--helpful",
        "v2 release",
    ]));
    assert!(updated.contains("helpful 1"), "{updated}");
    let listed = ok(remote(&["knowledge", "list", "--json"]));
    assert!(listed.contains(&item), "{listed}");
    ok(remote(&["knowledge", "delete", &item]));
    assert!(fails(remote(&["knowledge", "get", &item])).contains("NOT_FOUND"));

    let secret = dir.path().join("token.txt");
    std::fs::write(&secret, "token-123\n").unwrap();
    ok(remote(&[
        "resource",
        "save",
        "--id",
        "credentials/wiki",
        "--type",
        "credential",
        "--title",
        "Wiki bot",
        "--secure-body-file",
        secret.to_str().unwrap(),
    ]));
    let shown = ok(remote(&["resource", "get", "credentials/wiki"]));
    assert!(
        shown.contains("Wiki bot") && shown.contains("# token-123"),
        "{shown}"
    );
    assert!(ok(remote(&["resource", "list"])).contains("credentials/wiki"));
    ok(remote(&["resource", "delete", "credentials/wiki"]));
    assert!(!ok(remote(&["resource", "list"])).contains("credentials/wiki"));

    let committed = ok(remote(&[
        "memory",
        "commit",
        "--text",
        "I work in the Berlin office.",
    ]));
    assert!(committed.contains("statement(s) found"), "{committed}");
    let memories = ok(remote(&["memory", "list"]));
    assert!(memories.contains("ctx://user/alice/memories"), "{memories}");
    let uri = memories.lines().next().unwrap().trim().to_owned();
    assert!(ok(remote(&["memory", "show", &uri])).contains("Berlin"));
    assert!(!ok(admin(&["memory", "list"])).contains("Berlin"));
    ok(remote(&["memory", "delete", &uri]));
    assert!(ok(remote(&["memory", "list"])).contains("no memories yet"));

    // Traces: alice's answers, one of them in full.
    let traces = ok(remote(&["trace"]));
    let line = traces
        .lines()
        .find(|l| l.contains("How many days of annual leave"))
        .unwrap_or_else(|| panic!("{traces}"));
    let trace_id = line.split_whitespace().next().unwrap();
    let trace = ok(remote(&["trace", trace_id]));
    assert!(
        trace.contains("answer:") && trace.contains("route:") && trace.contains("evidence"),
        "{trace}"
    );
    // Another user's trace is not found; administrators read everyone's.
    assert!(ok(admin(&["trace", trace_id])).contains("annual leave"));

    // SQL data sources on the server: an administrator registers a database by its path
    // there; a user outside its scopes does not see it and may not register one.
    let db = dir.path().join("finance.sqlite");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE budgets (team TEXT, amount INTEGER);")
        .unwrap();
    let db = db.to_str().unwrap();
    let registered = ok(admin(&[
        "sql",
        "add",
        "finance",
        db,
        "--scopes",
        "team:finance",
    ]));
    assert!(registered.contains("registered finance"), "{registered}");
    assert!(ok(admin(&["sql", "list"])).contains("finance"));
    assert!(!ok(remote(&["sql", "list"])).contains("finance"));
    assert!(fails(remote(&["sql", "add", "mine", db])).contains("PERMISSION_DENIED"));
    ok(admin(&["sql", "remove", "finance"]));
    assert!(!ok(admin(&["sql", "list"])).contains("finance"));

    // A conversation in the terminal, read from standard input.
    let mut chat = knowhub(&elsewhere)
        .args(["--server", &url, "--api-key", &key, "chat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(
        chat.stdin.as_mut().unwrap(),
        b"How many days of annual leave do employees get?\n/open 1\n/trace\n/open 9\n/quit\n",
    )
    .unwrap();
    let said = ok(chat.wait_with_output().unwrap());
    assert!(
        said.contains("fifteen")
            && said.contains("[1] Handbook  kb://doc/")
            && said.contains("-- how this was answered")
            && said.contains("(no citation"),
        "{said}"
    );

    // Nothing was written into the laptop's own knowledge base.
    assert!(!elsewhere.join("accounts").exists());
}
