use super::*;

fn brute_force(
    vectors: &[Vec<f32>],
    query: &[f32],
    k: usize,
    allow: impl Fn(u64) -> bool,
) -> Vec<u64> {
    let mut scored: Vec<(f32, u64)> = vectors
        .iter()
        .enumerate()
        .filter(|(i, _)| allow(*i as u64 / 10))
        .map(|(i, v)| (v.iter().zip(query).map(|(a, b)| a * b).sum(), i as u64))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    scored.into_iter().take(k).map(|(_, id)| id).collect()
}

fn build(vectors: &[Vec<f32>]) -> FlatIndex {
    let mut index = FlatIndex::new(vectors[0].len());
    // Ten chunks per document: chunk i belongs to document i / 10.
    for (doc, group) in vectors.chunks(10).enumerate() {
        let entries: Vec<(u64, Vec<f32>)> = group
            .iter()
            .enumerate()
            .map(|(j, v)| ((doc * 10 + j) as u64, v.clone()))
            .collect();
        index.upsert_document(doc as u64, &entries).unwrap();
    }
    index
}

#[test]
fn matches_exact_search_with_and_without_filter() {
    let vectors = synthetic_unit_vectors(5_000, 64, 7);
    let index = build(&vectors);
    let queries = synthetic_unit_vectors(20, 64, 99);
    let only_odd = |doc: u64| doc % 2 == 1;
    let mut agree = 0;
    for q in &queries {
        let got: Vec<u64> = index
            .search(q, 10, None)
            .unwrap()
            .iter()
            .map(|h| h.chunk_id)
            .collect();
        agree += usize::from(got == brute_force(&vectors, q, 10, |_| true));
        let got: Vec<u64> = index
            .search(q, 10, Some(&only_odd))
            .unwrap()
            .iter()
            .map(|h| h.chunk_id)
            .collect();
        assert!(got.iter().all(|c| only_odd(c / 10)), "filtered doc leaked");
        agree += usize::from(got == brute_force(&vectors, q, 10, only_odd));
    }
    // Exact re-scoring makes the int8 scan lossless in practice.
    assert_eq!(agree, 40, "top-10 lists identical to brute force");
}

#[test]
fn filter_is_applied_inside_the_scan_not_after_top_k() {
    // 2,000 disallowed vectors identical to the query; the only allowed one is far away.
    let dim = 8;
    let query = vec![1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    let mut index = FlatIndex::new(dim);
    for doc in 0..2_000u64 {
        index.upsert_document(doc, &[(doc, query.clone())]).unwrap();
    }
    let far = vec![0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
    index.upsert_document(9_999, &[(9_999, far)]).unwrap();
    let hits = index.search(&query, 5, Some(&|doc| doc == 9_999)).unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].chunk_id, 9_999);
}

#[test]
fn upsert_replaces_and_reuses_slots() {
    let vectors = synthetic_unit_vectors(30, 16, 3);
    let mut index = FlatIndex::new(16);
    index
        .upsert_document(1, &[(10, vectors[0].clone()), (11, vectors[1].clone())])
        .unwrap();
    index
        .upsert_document(1, &[(12, vectors[2].clone())])
        .unwrap();
    assert_eq!(index.len(), 1);
    let hits = index.search(&vectors[0], 5, None).unwrap();
    assert_eq!(
        hits.iter().map(|h| h.chunk_id).collect::<Vec<_>>(),
        vec![12]
    );
    index
        .upsert_document(2, &[(20, vectors[3].clone()), (21, vectors[4].clone())])
        .unwrap();
    assert_eq!(index.live.len(), 3, "freed slots are reused");
    index.delete_document(1);
    index.delete_document(2);
    assert!(index.is_empty());
    assert!(index.search(&vectors[0], 5, None).unwrap().is_empty());
}

#[test]
fn bad_vectors_are_rejected_and_nothing_changes() {
    let mut index = FlatIndex::new(4);
    index
        .upsert_document(1, &[(1, vec![1.0, 0.0, 0.0, 0.0])])
        .unwrap();
    let cases: &[(Vec<f32>, VectorError)] = &[
        (vec![1.0, 0.0], VectorError::Dimension { want: 4, got: 2 }),
        (vec![f32::NAN, 0.0, 0.0, 0.0], VectorError::NotFinite),
        (vec![f32::INFINITY, 0.0, 0.0, 0.0], VectorError::NotFinite),
    ];
    for (v, want) in cases {
        assert_eq!(
            index.upsert_document(1, &[(2, v.clone())]).unwrap_err(),
            *want
        );
        assert_eq!(index.search(v, 1, None).unwrap_err(), *want);
    }
    assert!(
        index.contains_document(1),
        "a rejected upsert keeps the old vectors"
    );
    assert_eq!(index.len(), 1);
}
