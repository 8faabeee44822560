//! Prometheus's text exposition format (0.0.4), written by hand: a few
//! dozen series need no client library. Both APIs' `/metrics` use it.

use std::fmt::Write as _;

/// The format's content type.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// One sample's labels: name and value.
pub type Labels = Vec<(&'static str, String)>;

/// An exposition being written, family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
}

impl Exposition {
    /// A counter family; `name` ends in `_total`.
    pub fn counter(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels, f64)>,
    ) {
        self.family(name, "counter", help, samples);
    }

    /// A gauge family.
    pub fn gauge(
        &mut self,
        name: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels, f64)>,
    ) {
        self.family(name, "gauge", help, samples);
    }

    /// A histogram without labels.
    pub fn histogram(&mut self, name: &str, help: &str, h: &Histogram) {
        self.head(name, "histogram", help);
        let mut cumulative = 0;
        for (i, count) in h.counts.iter().enumerate() {
            cumulative += count;
            let le = h
                .bounds
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), f64::to_string);
            let _ = writeln!(self.out, "{name}_bucket{{le=\"{le}\"}} {cumulative}");
        }
        let _ = writeln!(self.out, "{name}_sum {}\n{name}_count {cumulative}", h.sum);
    }

    /// The text, every family written.
    pub fn into_text(self) -> String {
        self.out
    }

    fn family(
        &mut self,
        name: &str,
        kind: &str,
        help: &str,
        samples: impl IntoIterator<Item = (Labels, f64)>,
    ) {
        self.head(name, kind, help);
        for (labels, value) in samples {
            self.out.push_str(name);
            if !labels.is_empty() {
                self.out.push('{');
                for (i, (label, value)) in labels.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    let _ = write!(self.out, "{label}=\"{}\"", escape(value));
                }
                self.out.push('}');
            }
            let _ = writeln!(self.out, " {value}");
        }
    }

    fn head(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }
}

/// A label value as the format quotes it.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Observations in fixed buckets.
#[derive(Debug, Clone)]
pub struct Histogram {
    bounds: Vec<f64>,
    /// Per bucket, not cumulative; the last is +Inf.
    counts: Vec<u64>,
    sum: f64,
}

impl Histogram {
    /// Empty, with these upper bounds (ascending).
    pub fn new(bounds: &[f64]) -> Self {
        Self {
            bounds: bounds.to_vec(),
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
        }
    }

    /// One observation.
    pub fn observe(&mut self, value: f64) {
        let bucket = self
            .bounds
            .iter()
            .position(|le| value <= *le)
            .unwrap_or(self.bounds.len());
        self.counts[bucket] += 1;
        self.sum += value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_quoted_and_histograms_cumulative() {
        let mut h = Histogram::new(&[0.1, 1.0]);
        h.observe(0.05);
        h.observe(0.5);
        h.observe(5.0);
        let mut out = Exposition::default();
        out.counter(
            "x_total",
            "X.",
            [(vec![("tool", "a\"b\\c\nd".to_owned())], 2.0)],
        );
        out.histogram("y_seconds", "Y.", &h);
        let text = out.into_text();
        for line in [
            "# TYPE x_total counter",
            r#"x_total{tool="a\"b\\c\nd"} 2"#,
            r#"y_seconds_bucket{le="0.1"} 1"#,
            r#"y_seconds_bucket{le="1"} 2"#,
            r#"y_seconds_bucket{le="+Inf"} 3"#,
            "y_seconds_count 3",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} in:\n{text}");
        }
    }
}
