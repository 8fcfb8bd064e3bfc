//! The Muse paper's 13 dimensions of correction quality and its overall score, with the
//! labels its experts chose from (spelled as in its ratings files, `ratings/Q*.csv`, so a
//! judge's answer and an expert's compare as they are), ordered worst to best.

/// How a dimension is answered.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// One of these labels, worst first. Labels in `unordered` are answers off the scale
    /// ("Cant Determine"): counted for exact agreement, left out of averages.
    Labels {
        ordered: &'static [&'static str],
        unordered: &'static [&'static str],
    },
    /// 0 (worst) to 10 (best).
    Score,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Dimension {
    /// The key in the judge's JSON answer and in results.
    pub key: &'static str,
    /// The experts' ratings file, without `.csv`.
    pub file: &'static str,
    pub name: &'static str,
    pub scale: Scale,
    /// Rated once per reference (URL) of the reply, not once per reply.
    pub per_reference: bool,
    /// Measured by musebot (the link check), not asked of the judge.
    pub measured: bool,
}

const fn labels(ordered: &'static [&'static str]) -> Scale {
    Scale::Labels {
        ordered,
        unordered: &[],
    }
}

pub const DIMENSIONS: [Dimension; 14] = [
    Dimension {
        key: "explicitness",
        file: "Q1-correction_explicitness",
        name: "explicitness of identifying and explaining (in)accuracies",
        scale: labels(&["Unclear", "Implicit", "Explicit"]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "identification",
        file: "Q2-identification_accuracy",
        name: "existence of (in)correct identifications",
        scale: labels(&[
            "Do not exist",
            "Exist with misidentification",
            "Exist without misidentification",
        ]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "comprehensiveness",
        file: "Q2.1-identification_comprehensiveness",
        name: "comprehensiveness of correct identifications",
        scale: labels(&["No", "Low", "Medium", "High", "Extremely High"]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "explanation_accuracy",
        file: "Q2.2-explanation_accuracy",
        name: "accuracy of explanations",
        scale: labels(&[
            "Completely Incorrect",
            "Mostly Incorrect",
            "Half",
            "Mostly Correct",
            "Fully Correct",
        ]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "informativeness",
        file: "Q2.2.1-explanation_informativeness",
        name: "informativeness of accurate explanations (0–10)",
        scale: Scale::Score,
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "text_relevance",
        file: "Q3-text_relevance",
        name: "relevance of the text to the post (0–10)",
        scale: Scale::Score,
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "factuality",
        file: "Q4-text_factuality",
        name: "factuality of the text",
        scale: labels(&[
            "Completely False, Inaccurate, or Unverifiable",
            "Mostly False, Inaccurate, or Unverifiable",
            "Half Factual and Accurate",
            "Mostly Factual and Accurate",
            "Completely Factual and Accurate",
        ]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "fluency_mistakes",
        file: "Q5-text_fluency",
        name: "mistakes in the use of language",
        scale: labels(&["Yes", "Yes, but minor", "No"]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "coherence",
        file: "Q6-text_coherence",
        name: "coherence of the text",
        scale: labels(&[
            "Barely Coherent and Logical",
            "Partially Coherent and Logical",
            "Coherent and Logical",
        ]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "toxicity",
        file: "Q7-text_toxicity",
        name: "toxicity (impolite, provoking or biased)",
        scale: labels(&["Yes", "No"]),
        per_reference: false,
        measured: false,
    },
    Dimension {
        key: "reachability",
        file: "Q8-reference_reachability",
        name: "reachability of each reference",
        scale: labels(&["No", "Yes"]),
        per_reference: true,
        measured: true,
    },
    Dimension {
        key: "reference_credibility",
        file: "Q8.1-reference_credibility",
        name: "credibility of each reference",
        scale: Scale::Labels {
            ordered: &["Low Informed", "Low Not Informed", "Medium", "High", "Very High"],
            unordered: &["Cant Determine"],
        },
        per_reference: true,
        measured: false,
    },
    Dimension {
        key: "reference_relevance",
        file: "Q8.2-reference_relevance",
        name: "relevance of each reference to the text",
        scale: Scale::Labels {
            ordered: &["No", "Yes"],
            unordered: &["Cant Determine"],
        },
        per_reference: true,
        measured: false,
    },
    Dimension {
        key: "overall",
        file: "Q9-overall_quality",
        name: "overall quality (0–10)",
        scale: Scale::Score,
        per_reference: false,
        measured: false,
    },
];

impl Dimension {
    /// The label as the scale spells it (case, spacing and apostrophes forgiven), or the score
    /// 0–10 as text; `None` for anything else.
    pub fn normalize(&self, answer: &str) -> Option<String> {
        let plain = |s: &str| {
            s.to_lowercase()
                .replace(['\'', '’'], "")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self.scale {
            Scale::Score => {
                let n: f64 = answer.trim().parse().ok()?;
                (0.0..=10.0).contains(&n).then(|| format!("{}", n.round() as i64))
            }
            Scale::Labels { ordered, unordered } => {
                let a = plain(answer);
                ordered
                    .iter()
                    .chain(unordered)
                    .find(|l| plain(l) == a)
                    .map(|l| l.to_string())
            }
        }
    }

    /// A label's or a score's place from 0 (worst) to 1 (best); `None` off the scale.
    pub fn position(&self, label: &str) -> Option<f64> {
        match self.scale {
            Scale::Score => label.parse::<f64>().ok().map(|n| n / 10.0),
            Scale::Labels { ordered, .. } => {
                let i = ordered.iter().position(|l| *l == label)?;
                Some(if ordered.len() > 1 {
                    i as f64 / (ordered.len() - 1) as f64
                } else {
                    1.0
                })
            }
        }
    }

    pub fn by_key(key: &str) -> Option<&'static Dimension> {
        DIMENSIONS.iter().find(|d| d.key == key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_in_the_scales_spelling() {
        let cred = Dimension::by_key("reference_credibility").unwrap();
        assert_eq!(cred.normalize("very  high").as_deref(), Some("Very High"));
        assert_eq!(cred.normalize("Can't determine").as_deref(), Some("Cant Determine"));
        assert_eq!(cred.normalize("superb"), None);
        assert_eq!(cred.position("Cant Determine"), None);
        assert_eq!(cred.position("Very High"), Some(1.0));
        let overall = Dimension::by_key("overall").unwrap();
        assert_eq!(overall.normalize("7.4").as_deref(), Some("7"));
        assert_eq!(overall.normalize("11"), None);
    }

    /// The labels the experts used are exactly the scales' (read from Muse's files).
    #[test]
    fn every_expert_label_is_on_its_scale() {
        let Some(dir) = crate::eval::shared_data("muse/ratings") else {
            return;
        };
        for d in &DIMENSIONS {
            let mut r = csv::Reader::from_path(dir.join(format!("{}.csv", d.file))).unwrap();
            let label = r.headers().unwrap().iter().position(|h| h == "label").unwrap();
            for row in r.records() {
                let l = row.unwrap()[label].trim().to_string();
                if !l.is_empty() {
                    assert_eq!(d.normalize(&l).as_deref(), Some(l.as_str()), "{}: {l}", d.file);
                }
            }
        }
    }
}
