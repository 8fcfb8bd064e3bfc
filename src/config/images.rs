//! `[images]` (what the bot reads of a post's images: caps, OCR) and `[vision]` (the
//! vision-capable model that captions them; by default the `[llm]` endpoint and model).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ImagesConfig {
    /// Read a post's images (description, OCR) at all.
    pub enabled: bool,
    /// Images read per post, at most (Mastodon allows 4, Bluesky 4).
    pub max_images: usize,
    /// Largest image downloaded, bytes.
    pub max_bytes: usize,
    /// Largest image decoded, width × height (read from the header first).
    pub max_pixels: u64,
    /// The tesseract binary ("" = no OCR).
    pub ocr: String,
    /// Tesseract languages, e.g. "eng" or "eng+fra" (each needs its Debian package).
    pub ocr_languages: String,
    /// Seconds of OCR per image, all versions of it together.
    pub ocr_timeout_secs: u64,
    /// Read `file://` images (`musebot check --image FILE` only; never from a config file,
    /// so no post can make the daemon read a local file).
    #[serde(skip)]
    pub local_files: bool,
}

impl Default for ImagesConfig {
    fn default() -> Self {
        ImagesConfig {
            enabled: true,
            max_images: 4,
            max_bytes: 10_000_000,
            max_pixels: 40_000_000,
            ocr: "tesseract".into(),
            ocr_languages: "eng".into(),
            ocr_timeout_secs: 20,
            local_files: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VisionConfig {
    /// Caption images with a vision-capable model (when it fails or is off, descriptions come
    /// from OCR and alt text alone, and the trace says so).
    pub enabled: bool,
    /// Root of an OpenAI-compatible API ("" = `llm.base_url`).
    pub base_url: String,
    /// Model name ("" = `llm.model`).
    pub model: String,
    /// Environment variable with the API key ("" = `llm.api_key_env`).
    pub api_key_env: String,
    /// File with the API key; wins over api_key_env when set.
    pub api_key_file: String,
}

impl Default for VisionConfig {
    fn default() -> Self {
        VisionConfig {
            enabled: true,
            base_url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            api_key_file: String::new(),
        }
    }
}
