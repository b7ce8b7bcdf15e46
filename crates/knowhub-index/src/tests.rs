//! Behaviour tests of the index (tokenizer and query unit tests live in their
//! modules).

use std::collections::{BTreeSet, HashSet};

use crate::index::search_with_coord;
use crate::{ChunkEntry, DocFilter, IndexError, SearchRequest, TantivyIndex, TextIndex, analyze};

fn chunk<'a>(chunk_id: u64, title: &'a str, heading: &'a str, body: &'a str) -> ChunkEntry<'a> {
    ChunkEntry {
        chunk_id,
        title,
        heading,
        body,
    }
}

fn body_only(chunk_id: u64, body: &str) -> ChunkEntry<'_> {
    chunk(chunk_id, "", "", body)
}

fn ids(index: &TantivyIndex, query: &str) -> Vec<u64> {
    index
        .search(&SearchRequest::new(query, 100))
        .unwrap_or_else(|e| panic!("search {query:?}: {e}"))
        .iter()
        .map(|h| h.chunk_id)
        .collect()
}

/// Index with one chunk per document, chunk_id = doc_id * 10.
fn index_of(bodies: &[&str]) -> TantivyIndex {
    let index = TantivyIndex::in_memory().unwrap();
    for (i, body) in bodies.iter().enumerate() {
        let doc = i as u64 + 1;
        index
            .replace_document(doc, &[body_only(doc * 10, body)])
            .unwrap();
    }
    index.commit().unwrap();
    index
}

#[test]
fn matching_table() {
    let index = index_of(&[
        "Our deployment guide for production clusters", // 10
        "公司的部署规范和上线流程",                     // 20
        "Kubernetes部署规范v2 更新说明",                // 30
        "東京タワーに行きました",                       // 40
        "数据库管理系统的设计与实现",                   // 50
        "Build for x86_64 and aarch64 targets",         // 60
        "한국어 검색 지원",                             // 70
        "Café menus are naïve",                         // 80
    ]);
    // (query, chunks that must be found, chunks that must not be found)
    let cases: &[(&str, &[u64], &[u64])] = &[
        ("deployments", &[10], &[20]),
        ("DEPLOYING", &[10], &[]),
        ("部署", &[20, 30], &[10, 50]),
        ("规范", &[20, 30], &[]),
        ("kubernetes", &[30], &[20]),
        ("v2", &[30], &[]),
        ("数据", &[50], &[]),
        ("数据库", &[50], &[]),
        ("タワー", &[40], &[]),
        ("x86_64", &[60], &[]),
        ("x86", &[60], &[]),
        ("검색", &[70], &[]),
        ("cafe naive", &[80], &[]),
        ("\"production clusters\"", &[10], &[]),
        ("\"clusters production\"", &[], &[10]),
        ("部署 -kubernetes", &[20], &[30]),
        ("部署 -\"上线流程\"", &[30], &[20]),
        ("\"deployment guide", &[10], &[]), // unbalanced quote
        ("deploy deploy deployment", &[10], &[]), // repeated terms
        ("部署规范", &[20, 30], &[]),
        ("\"部署规范\"", &[20, 30], &[]),
        ("\"数据库管理\"", &[50], &[]),
        ("(title: AND", &[], &[]), // no syntax errors, just no match
    ];
    for (query, found, not_found) in cases {
        let got = ids(&index, query);
        for f in *found {
            assert!(got.contains(f), "{query:?}: expected {f} in {got:?}");
        }
        for n in *not_found {
            assert!(!got.contains(n), "{query:?}: did not expect {n} in {got:?}");
        }
    }
}

#[test]
fn empty_queries_are_errors() {
    let index = index_of(&["something"]);
    for q in ["", "   ", "the of and", "?!", "-something", "\"\"", "的"] {
        assert!(
            matches!(
                index.search(&SearchRequest::new(q, 10)),
                Err(IndexError::EmptyQuery)
            ),
            "{q:?}"
        );
    }
    assert!(matches!(
        index.snippet("", "text", 10),
        Err(IndexError::EmptyQuery)
    ));
}

#[test]
fn nothing_visible_before_commit() {
    let index = TantivyIndex::in_memory().unwrap();
    index
        .replace_document(1, &[body_only(10, "visible after commit")])
        .unwrap();
    assert!(ids(&index, "visible").is_empty());
    assert_eq!(index.num_chunks().unwrap(), 0);
    index.commit().unwrap();
    assert_eq!(ids(&index, "visible"), vec![10]);

    index.delete_document(1).unwrap();
    assert_eq!(ids(&index, "visible"), vec![10], "delete not committed yet");
    index.commit().unwrap();
    assert!(ids(&index, "visible").is_empty());
}

#[test]
fn replace_is_idempotent_and_replaces() {
    let index = TantivyIndex::in_memory().unwrap();
    let v1 = [body_only(10, "alpha one"), body_only(11, "alpha two")];
    for _ in 0..3 {
        index.replace_document(1, &v1).unwrap();
        index
            .replace_document(2, &[body_only(20, "alpha other")])
            .unwrap();
    }
    index.commit().unwrap();
    // Crash repair re-runs a replace whose commit may or may not have landed.
    index.replace_document(1, &v1).unwrap();
    index.commit().unwrap();
    assert_eq!(index.num_chunks().unwrap(), 3);
    let mut got = ids(&index, "alpha");
    got.sort_unstable();
    assert_eq!(got, vec![10, 11, 20]);

    index.replace_document(1, &[body_only(12, "beta")]).unwrap();
    index.commit().unwrap();
    assert_eq!(ids(&index, "alpha"), vec![20]);
    assert_eq!(ids(&index, "beta"), vec![12]);
    assert_eq!(index.num_chunks().unwrap(), 2);

    index.replace_document(1, &[]).unwrap();
    index.delete_document(2).unwrap();
    index.delete_document(2).unwrap();
    index.delete_document(99).unwrap();
    index.commit().unwrap();
    assert_eq!(index.num_chunks().unwrap(), 0);
    assert!(index.doc_ids().unwrap().is_empty());
}

#[test]
fn doc_ids_and_clear() {
    let index = index_of(&["a1", "b2", "c3"]);
    assert_eq!(index.doc_ids().unwrap(), BTreeSet::from([1, 2, 3]));
    index.delete_document(2).unwrap();
    index.commit().unwrap();
    assert_eq!(index.doc_ids().unwrap(), BTreeSet::from([1, 3]));
    index
        .replace_document(3, &[body_only(31, "three a"), body_only(32, "three b")])
        .unwrap();
    index.commit().unwrap();
    let counts: Vec<(u64, u64)> = index.doc_chunk_counts().unwrap().into_iter().collect();
    assert_eq!(counts, vec![(1, 1), (3, 2)], "replaced, not appended");

    index.clear().unwrap();
    index
        .replace_document(5, &[body_only(50, "after clear")])
        .unwrap();
    index.commit().unwrap();
    assert_eq!(index.doc_ids().unwrap(), BTreeSet::from([5]));
    assert_eq!(index.num_chunks().unwrap(), 1);
}

#[test]
fn filter_is_applied_before_top_k() {
    let index = TantivyIndex::in_memory().unwrap();
    // 3000 disallowed documents that score far higher (term in title, heading
    // and body, several times) than the allowed ones.
    for doc in 1..=3000u64 {
        index
            .replace_document(
                doc,
                &[chunk(doc * 10, "budget", "budget", "budget budget report")],
            )
            .unwrap();
    }
    let allowed: Vec<u64> = (5001..=5005).collect();
    for &doc in &allowed {
        let body = "a long annual review that mentions the budget once among many other words";
        index
            .replace_document(doc, &[body_only(doc * 10, body)])
            .unwrap();
    }
    index.commit().unwrap();

    let unfiltered = index.search(&SearchRequest::new("budget", 3)).unwrap();
    assert!(unfiltered.iter().all(|h| h.doc_id <= 3000));

    let req = SearchRequest::new("budget", 3).with_filter(DocFilter::allow_only(allowed.clone()));
    let hits = index.search(&req).unwrap();
    assert_eq!(hits.len(), 3, "top-k filled from allowed docs only");
    assert!(hits.iter().all(|h| allowed.contains(&h.doc_id)), "{hits:?}");

    let all = SearchRequest::new("budget", 100).with_filter(DocFilter::allow_only([5003]));
    let hits = index.search(&all).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!((hits[0].doc_id, hits[0].chunk_id), (5003, 50030));

    let deny = SearchRequest::new("budget", 10).with_filter(DocFilter::deny(1..=3000));
    assert_eq!(index.search(&deny).unwrap().len(), 5);

    let nothing = SearchRequest::new("budget", 10).with_filter(DocFilter::new(|_| false));
    assert!(index.search(&nothing).unwrap().is_empty());
}

#[test]
fn title_then_heading_then_body() {
    let index = TantivyIndex::in_memory().unwrap();
    // Same text everywhere so only the field of the match differs.
    let filler = "lorem ipsum dolor";
    index
        .replace_document(1, &[chunk(10, filler, filler, "observability lorem")])
        .unwrap();
    index
        .replace_document(2, &[chunk(20, filler, "observability lorem", filler)])
        .unwrap();
    index
        .replace_document(3, &[chunk(30, "observability lorem", filler, filler)])
        .unwrap();
    index.commit().unwrap();
    assert_eq!(ids(&index, "observability"), vec![30, 20, 10]);
}

#[test]
fn hits_carry_ids_and_scores() {
    let index = index_of(&["rust search engine", "rust"]);
    let hits = index
        .search(&SearchRequest::new("rust search", 10))
        .unwrap();
    assert_eq!(hits.len(), 2);
    assert_eq!((hits[0].chunk_id, hits[0].doc_id), (10, 1));
    assert!(hits[0].score > hits[1].score);
    assert!(
        index
            .search(&SearchRequest::new("rust", 0))
            .unwrap()
            .is_empty()
    );
}

#[test]
fn snippets_highlight_english_and_chinese() {
    let index = index_of(&["deployment"]);
    // (query, text, max_chars, expected highlighted texts)
    let cases: &[(&str, &str, usize, &[&str])] = &[
        (
            "deployments",
            "Read this first. The Deployment of services is automated.",
            200,
            &["Deployment"],
        ),
        (
            "部署",
            "所有服务的部署必须经过灰度发布，部署完成后通知。",
            100,
            &["部署", "部署"],
        ),
        ("数据库", "我们的数据库管理系统", 100, &["数据库"]),
        ("数据", "我们的数据库管理系统", 100, &["数据"]),
        (
            "kubernetes 规范",
            "Kubernetes部署规范v2",
            100,
            &["Kubernetes", "规范"],
        ),
        ("タワー", "東京タワーに行きました", 100, &["タワ"]),
        (
            "\"gradual rollout\" -legacy",
            "A gradual rollout plan.",
            100,
            &["gradual", "rollout"],
        ),
    ];
    for (query, text, max, expected) in cases {
        let s = index.snippet(query, text, *max).unwrap();
        assert!(text.contains(&s.fragment), "{query:?}: {s:?}");
        let got: Vec<&str> = s
            .highlights
            .iter()
            .map(|r| s.fragment.get(r.clone()).expect("valid highlight range"))
            .collect();
        assert_eq!(&got, expected, "{query:?} in {text:?}");
    }
}

#[test]
fn snippet_respects_char_budget_and_falls_back() {
    let index = index_of(&["x"]);
    let text = format!("{}关键词{}", "前文".repeat(100), "后文".repeat(100));
    let s = index.snippet("关键词", &text, 30).unwrap();
    assert!(s.fragment.chars().count() <= 30, "{}", s.fragment);
    assert_eq!(s.highlights.len(), 1);
    assert_eq!(&s.fragment[s.highlights[0].clone()], "关键词");

    let s = index
        .snippet("absent", "Nothing matches here at all", 7)
        .unwrap();
    assert_eq!(s.fragment, "Nothing");
    assert!(s.highlights.is_empty());
    assert_eq!(
        index.snippet("x", "x", 0).unwrap(),
        crate::Snippet::default()
    );
}

#[test]
fn persists_across_reopen_and_reports_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    {
        let index = TantivyIndex::open(&path).unwrap();
        index
            .replace_document(1, &[chunk(10, "持久化", "", "survives a restart")])
            .unwrap();
        index.commit().unwrap();
        index
            .replace_document(2, &[body_only(20, "never committed restart")])
            .unwrap();

        match TantivyIndex::open(&path) {
            Err(e @ IndexError::Locked { .. }) => {
                assert!(e.to_string().contains("in use by another KnowHub process"));
            }
            other => panic!("expected Locked, got {other:?}"),
        }
        // A second process can still search, and cannot write.
        let reader = TantivyIndex::open_read_only(&path).unwrap();
        assert!(reader.is_read_only());
        assert_eq!(ids(&reader, "restart"), vec![10]);
        assert!(matches!(
            reader.delete_document(1),
            Err(IndexError::ReadOnly)
        ));
        assert!(matches!(reader.commit(), Err(IndexError::ReadOnly)));
    }
    let index = TantivyIndex::open(&path).unwrap();
    assert_eq!(ids(&index, "restart"), vec![10]);
    assert_eq!(ids(&index, "持久化"), vec![10]);
    assert_eq!(index.doc_ids().unwrap(), BTreeSet::from([1]));
}

/// A process killed after tantivy wrote a commit's delete file but before
/// meta.json named it leaves that file behind; opstamps restart from
/// meta.json, so the next commit wants the same name. Reopening must clear it
/// (this state made the crash test fail with FileAlreadyExists).
#[test]
fn a_commit_cut_short_by_a_kill_does_not_block_later_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("index");
    let meta = path.join("meta.json");
    {
        let index = TantivyIndex::open(&path).unwrap();
        index
            .replace_document(1, &[body_only(10, "alpha")])
            .unwrap();
        index.replace_document(2, &[body_only(20, "beta")]).unwrap();
        index.commit().unwrap();
    }
    let before_kill = std::fs::read(&meta).unwrap();
    // The run that gets killed: same operations as the run after it.
    {
        let index = TantivyIndex::open(&path).unwrap();
        index.delete_document(1).unwrap();
        index.commit().unwrap();
    }
    // The kill: the delete file is on disk, meta.json is the older one.
    std::fs::write(&meta, &before_kill).unwrap();
    let orphans = || {
        std::fs::read_dir(&path)
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                name.to_string_lossy().ends_with(".del")
            })
            .count()
    };
    assert_eq!(orphans(), 1, "the test must start from the crash state");

    let index = TantivyIndex::open(&path).unwrap();
    assert_eq!(
        ids(&index, "alpha"),
        vec![10],
        "the cut commit never happened"
    );
    index.delete_document(1).unwrap();
    index.commit().unwrap();
    assert!(ids(&index, "alpha").is_empty());
    assert_eq!(ids(&index, "beta"), vec![20]);
}

#[test]
fn index_is_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<TantivyIndex>();
    let index = std::sync::Arc::new(index_of(&["shared"]));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let index = index.clone();
            std::thread::spawn(move || ids(&index, "shared"))
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), vec![10]);
    }
}

/// Measurement behind "jieba search mode, not bigrams" (run with
/// `--nocapture` to see the numbers). Conjunctive term matching of each query
/// against each document under both analyses.
#[test]
fn cjk_mode_measurement() {
    fn bigrams(text: &str) -> Vec<String> {
        let chars: Vec<char> = text.chars().filter(|c| c.is_alphanumeric()).collect();
        chars.windows(2).map(|w| w.iter().collect()).collect()
    }
    let docs = [
        "数据库管理系统的设计与实现",
        "大型数据仓库的部署规范",
        "图书馆管理员负责图书借阅",
        "北京大学的计算机科学系",
        "机器学习模型的训练与部署",
        "分布式存储系统架构",
    ];
    // (query, relevant doc indexes)
    let queries: &[(&str, &[usize])] = &[
        ("数据库", &[0]),
        ("数据", &[0, 1]),
        ("管理", &[0, 2]),
        ("部署", &[1, 4]),
        ("规范", &[1]),
        ("大学", &[3]),
        ("计算机", &[3]),
        ("学习", &[4]),
        ("存储", &[5]),
        ("系统", &[0, 5]),
        ("图书", &[2]),
        ("模型训练", &[4]),
        ("库管", &[]),
        ("馆管", &[]),
        ("理系", &[]),
    ];
    type Analysis = fn(&str) -> Vec<String>;
    let modes: [(&str, Analysis); 2] = [("jieba-search", analyze), ("bigram", bigrams)];
    let mut recall = Vec::new();
    for (name, f) in modes {
        let doc_terms: Vec<HashSet<String>> =
            docs.iter().map(|d| f(d).into_iter().collect()).collect();
        let total_terms: usize = docs.iter().map(|d| f(d).len()).sum();
        let (mut hit, mut relevant, mut false_pos) = (0, 0, 0);
        for (q, rel) in queries {
            let q_terms = f(q);
            for (i, terms) in doc_terms.iter().enumerate() {
                let matched = !q_terms.is_empty() && q_terms.iter().all(|t| terms.contains(t));
                match (matched, rel.contains(&i)) {
                    (true, true) => hit += 1,
                    (true, false) => false_pos += 1,
                    _ => {}
                }
            }
            relevant += rel.len();
        }
        eprintln!(
            "{name}: recall {hit}/{relevant}, false positives {false_pos}, indexed tokens {total_terms}"
        );
        recall.push((hit, false_pos));
    }
    // Search mode must find every relevant document with fewer false hits.
    assert_eq!(
        recall[0].0,
        queries.iter().map(|(_, r)| r.len()).sum::<usize>()
    );
    assert!(recall[0].1 < recall[1].1);
}

/// Measurement behind `COORD_FACTOR` (run with `--nocapture`): rank of the
/// chunk holding *all* query terms, for several factors, on two small corpora.
#[test]
fn coordination_bonus_measurement() {
    fn run(bodies: &[String], query: &str, best: u64) -> Vec<Option<usize>> {
        let index = TantivyIndex::in_memory().unwrap();
        for (i, body) in bodies.iter().enumerate() {
            let doc = i as u64 + 1;
            index
                .replace_document(doc, &[body_only(doc, body)])
                .unwrap();
        }
        index.commit().unwrap();
        let mut ranks = Vec::new();
        for factor in FACTORS {
            let hits = search_with_coord(&index, &SearchRequest::new(query, 5), factor).unwrap();
            let scores: Vec<String> = hits
                .iter()
                .map(|h| format!("{}:{:.2}", h.chunk_id, h.score))
                .collect();
            eprintln!("{query:?} factor {factor}: {}", scores.join(" "));
            ranks.push(hits.iter().position(|h| h.chunk_id == best));
        }
        ranks
    }
    const FACTORS: [f32; 5] = [0.0, 0.25, 0.5, 1.0, 2.0];
    let chosen = FACTORS
        .iter()
        .position(|&b| b == crate::query::COORD_FACTOR)
        .unwrap();

    // Rare term repeated vs all terms once; the other two terms are common.
    let mut bodies: Vec<String> = vec![
        "how to install helm on a kubernetes cluster".into(),
        "helm helm helm: helm charts, helm repos, helm plugins".into(),
        "install helm with the script and then verify the helm version output".into(),
    ];
    bodies.extend((0..40).map(|i| format!("kubernetes note {i} about pods and install steps")));
    let ranks = run(&bodies, "install helm kubernetes", 1);
    assert_eq!(ranks[chosen], Some(0));

    // Three rare-ish terms: chunk 1 has all, chunk 2 two of them repeatedly.
    let mut bodies: Vec<String> = vec![
        "数据库 备份 恢复 的操作手册".into(),
        "数据库备份：每天备份数据库，备份文件保存在数据库服务器".into(),
        "恢复出厂设置".into(),
    ];
    bodies.extend((0..20).map(|i| format!("第{i}章 其他内容")));
    let ranks = run(&bodies, "数据库 备份 恢复", 1);
    assert_eq!(ranks[chosen], Some(0));
}
