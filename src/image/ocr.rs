//! The text in an image, read by the tesseract CLI (Debian's `tesseract-ocr`; the CLI rather
//! than a binding: both Rust bindings need libclang at build time and cannot share a build).
//!
//! Memes put white text with a black outline on a photo, which tesseract reads as nothing; so
//! the image is read in up to three versions — grey (upscaled when small), thresholded (pixels
//! brighter than 200 become black ink on white) and inverted — each piped to `tesseract - -` in
//! sparse-text mode (`--psm 11`: signs and captions scattered over a photo) under what is left of
//! one time budget. The best-read version comes first, then every line of the others that adds
//! a word (on the shared corpus, the union of versions reads twice the words of the best one;
//! `tests/images.rs` prints the figures). The text is untrusted input, like a post's text.
//!
//! An image is read in its post's language where its tesseract pack is among
//! `images.ocr_languages` ([`Ocr::languages_for`]: that pack first, with English beside it);
//! otherwise with every configured pack.

use std::io::Cursor;
use std::process::Stdio;
use std::time::{Duration, Instant};

use image::{DynamicImage, GrayImage, ImageFormat};
use tokio::io::AsyncWriteExt;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OcrError {
    #[error("tesseract is not installed (`{0}`): install the Debian package tesseract-ocr, or set images.ocr = \"\"")]
    Missing(String),
    #[error("tesseract failed: {0}")]
    Failed(String),
    #[error("OCR took longer than {0} s")]
    TimedOut(u64),
}

#[derive(Debug, Clone)]
pub struct Ocr {
    /// The tesseract binary.
    pub binary: String,
    /// Budget for all versions of one image.
    pub timeout: Duration,
    /// Tesseract's language(s), e.g. "eng" or "eng+fra".
    pub languages: String,
}

/// Tesseract's pack for a language tag (ISO 639-1; Chinese by its script, as
/// [`crate::lang::chinese_variant`] reads the tag), for the languages the bot speaks.
pub fn tesseract_pack(tag: &str) -> Option<&'static str> {
    let lang = crate::lang::primary(Some(tag))?;
    if lang == "zh" {
        return Some(match crate::lang::chinese_variant(tag, "") {
            "zh-Hant" => "chi_tra",
            _ => "chi_sim",
        });
    }
    Some(match lang.as_str() {
        "en" => "eng",
        "de" => "deu",
        "fr" => "fra",
        "es" => "spa",
        "pt" => "por",
        "it" => "ita",
        "nl" => "nld",
        "ja" => "jpn",
        "ko" => "kor",
        "ru" => "rus",
        "uk" => "ukr",
        "pl" => "pol",
        "ar" => "ara",
        "tr" => "tur",
        "id" => "ind",
        "ca" => "cat",
        "sv" => "swe",
        _ => return None,
    })
}

impl Ocr {
    /// The packs to read an image of a post in `post_language` with: the post's own pack first
    /// (and English, when configured) where it is configured; else every configured pack.
    pub fn languages_for(&self, post_language: Option<&str>) -> String {
        let configured: Vec<&str> = self
            .languages
            .split('+')
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let own = post_language
            .and_then(tesseract_pack)
            .filter(|p| configured.contains(p));
        match own {
            Some("eng") => "eng".into(),
            Some(p) if configured.contains(&"eng") => format!("{p}+eng"),
            Some(p) => p.into(),
            None => self.languages.clone(),
        }
    }

    /// The image's text ("" when it has none), from the best-read version, with every
    /// configured pack.
    pub async fn read(&self, image: &DynamicImage) -> Result<String, OcrError> {
        self.read_in(image, &self.languages.clone()).await
    }

    /// The same, with these packs (`"deu+eng"`).
    pub async fn read_in(&self, image: &DynamicImage, languages: &str) -> Result<String, OcrError> {
        let image = image.clone();
        let versions = tokio::task::spawn_blocking(move || versions(&image))
            .await
            .map_err(|e| OcrError::Failed(e.to_string()))?;
        let started = Instant::now();
        let mut texts = Vec::new();
        for (i, png) in versions.iter().enumerate() {
            let left = self.timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                if i == 0 {
                    return Err(OcrError::TimedOut(self.timeout.as_secs()));
                }
                break;
            }
            let text = match self.run(png, left, languages).await {
                Ok(t) => t,
                Err(OcrError::TimedOut(_)) if i > 0 => break,
                Err(e) => return Err(e),
            };
            texts.push(text);
        }
        Ok(merge(texts))
    }

    async fn run(&self, png: &[u8], timeout: Duration, languages: &str) -> Result<String, OcrError> {
        let mut child = tokio::process::Command::new(&self.binary)
            .args(["-", "-", "-l", languages, "--psm", "11"])
            .env("OMP_THREAD_LIMIT", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => OcrError::Missing(self.binary.clone()),
                _ => OcrError::Failed(e.to_string()),
            })?;
        let mut stdin = child.stdin.take().expect("piped");
        let input = png.to_vec();
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
        let out = tokio::time::timeout(timeout, child.wait_with_output())
            .await
            .map_err(|_| OcrError::TimedOut(timeout.as_secs()))?
            .map_err(|e| OcrError::Failed(e.to_string()))?;
        let _ = writer.await;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(OcrError::Failed(err.lines().last().unwrap_or("").to_string()));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

/// The versions tesseract reads, as PNG bytes: grey, thresholded, inverted.
fn versions(image: &DynamicImage) -> Vec<Vec<u8>> {
    let mut grey: GrayImage = image.to_luma8();
    let short = grey.width().min(grey.height());
    let long = grey.width().max(grey.height());
    // Small text reads better bigger; never past 3,000 pixels on the long side.
    if short < 1000 && long > 0 {
        let scale = (2.0f64).min(3000.0 / f64::from(long)).max(1.0);
        if scale > 1.0 {
            let (w, h) = (
                (f64::from(grey.width()) * scale) as u32,
                (f64::from(grey.height()) * scale) as u32,
            );
            grey = image::imageops::resize(&grey, w, h, image::imageops::FilterType::Triangle);
        }
    }
    let threshold = GrayImage::from_fn(grey.width(), grey.height(), |x, y| {
        image::Luma([if grey.get_pixel(x, y)[0] > 200 { 0 } else { 255 }])
    });
    let mut inverted = grey.clone();
    image::imageops::invert(&mut inverted);
    [grey, threshold, inverted]
        .iter()
        .map(|g| {
            let mut out = Cursor::new(Vec::new());
            g.write_to(&mut out, ImageFormat::Png).expect("PNG to memory");
            out.into_inner()
        })
        .collect()
}

/// Tokens that look like words: two or more characters, mostly letters.
fn word_score(text: &str) -> usize {
    text.split_whitespace()
        .filter(|t| {
            let letters = t.chars().filter(|c| c.is_alphabetic()).count();
            letters >= 2 && letters * 3 >= t.chars().count() * 2
        })
        .count()
}

/// The best-read version's lines, then each other version's lines that add a word.
fn merge(mut texts: Vec<String>) -> String {
    texts.sort_by_key(|t| std::cmp::Reverse(word_score(t)));
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for text in &texts {
        for line in tidy(text).lines() {
            let words: Vec<String> = line
                .split_whitespace()
                .filter(|w| word_score(w) > 0)
                .map(|w| w.to_lowercase())
                .collect();
            let new = words.iter().filter(|w| !seen.contains(*w)).count();
            if new > 0 {
                seen.extend(words);
                lines.push(line.to_string());
            }
        }
    }
    lines.join("\n")
}

/// One line per line of text, blank lines and stray symbols gone.
fn tidy(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| word_score(l) > 0)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_score_and_noise_goes() {
        assert_eq!(word_score("Hello world ~~ | 12 a"), 2);
        assert_eq!(
            tidy("  ~ |\nBREAKING NEWS\n\n— ;\nmore text "),
            "BREAKING NEWS\nmore text"
        );
        let merged = merge(vec![
            "NEWS today".into(),
            "BREAKING NEWS\nnews today\nmore words".into(),
        ]);
        assert_eq!(merged, "BREAKING NEWS\nnews today\nmore words");
    }

    #[test]
    fn an_image_is_read_in_its_posts_language_when_that_pack_is_configured() {
        let ocr = |l: &str| Ocr {
            binary: "tesseract".into(),
            timeout: Duration::from_secs(5),
            languages: l.into(),
        };
        let all = ocr("eng+deu+jpn");
        assert_eq!(all.languages_for(Some("de-AT")), "deu+eng");
        assert_eq!(all.languages_for(Some("ja")), "jpn+eng");
        assert_eq!(all.languages_for(Some("en")), "eng");
        assert_eq!(
            all.languages_for(Some("fr")),
            "eng+deu+jpn",
            "no French pack: every configured one"
        );
        assert_eq!(all.languages_for(None), "eng+deu+jpn");
        assert_eq!(ocr("jpn").languages_for(Some("ja")), "jpn");
        assert_eq!(ocr("eng").languages_for(Some("de")), "eng");
    }

    #[tokio::test]
    async fn a_missing_binary_is_a_clear_error() {
        let ocr = Ocr {
            binary: "/nonexistent/tesseract".into(),
            timeout: Duration::from_secs(5),
            languages: "eng".into(),
        };
        let img = DynamicImage::new_rgb8(10, 10);
        assert_eq!(
            ocr.read(&img).await,
            Err(OcrError::Missing("/nonexistent/tesseract".into()))
        );
    }
}
