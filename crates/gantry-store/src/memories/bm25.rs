//! Okapi BM25 exactly as SQLite FTS5's `bm25()` computes it, for stores that
//! have no full-text index. FTS5 takes its statistics over the whole table,
//! so this takes them over every stored memory, whatever the search's
//! scope or filters: both stores then rank the same memories alike.

/// FTS5's term-frequency saturation.
const K1: f64 = 1.2;
/// FTS5's length normalisation.
const B: f64 = 0.75;
/// FTS5's floor for the IDF of a term in more than half the rows.
const MIN_IDF: f64 = 1e-6;

/// Each document's relevance to `terms` (higher is better), or `None` when
/// it holds none of them. A document is the tokens of one memory (content
/// and tags); `docs` is every stored memory.
pub(crate) fn scores(docs: &[Vec<String>], terms: &[String]) -> Vec<Option<f64>> {
    if docs.is_empty() {
        return Vec::new();
    }
    let rows = docs.len() as f64;
    let total_tokens: usize = docs.iter().map(Vec::len).sum();
    let avgdl = total_tokens as f64 / rows;
    let idf: Vec<f64> = terms
        .iter()
        .map(|term| {
            let hits = docs.iter().filter(|d| d.contains(term)).count() as f64;
            let idf = ((rows - hits + 0.5) / (hits + 0.5)).ln();
            if idf <= 0.0 { MIN_IDF } else { idf }
        })
        .collect();
    docs.iter()
        .map(|doc| {
            let len = doc.len() as f64;
            let mut matched = false;
            let mut score = 0.0;
            for (term, idf) in terms.iter().zip(&idf) {
                let freq = doc.iter().filter(|t| *t == term).count() as f64;
                if freq > 0.0 {
                    matched = true;
                    score += idf * (freq * (K1 + 1.0)) / (freq + K1 * (1.0 - B + B * len / avgdl));
                }
            }
            matched.then_some(score)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn rarer_terms_and_shorter_documents_rank_higher() {
        let docs = [
            doc("the cat sat on the mat"),
            doc("the dog"),
            doc("the dog chased the cat around the big garden"),
            doc("unrelated words only"),
            doc("more filler"),
            doc("and more filler still"),
        ];
        let s = scores(&docs, &["dog".to_owned()]);
        assert_eq!(s[0], None);
        assert_eq!(s[3], None);
        assert!(s[1] > s[2], "shorter document first: {s:?}");

        let both = scores(&docs, &["cat".to_owned(), "dog".to_owned()]);
        assert!(both[2] > both[1] && both[2] > both[0], "{both:?}");
    }
}
