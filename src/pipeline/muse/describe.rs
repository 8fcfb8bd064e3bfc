//! Step 0, describe: Muse's informative image description, one per image of the post (at most
//! `images.max_images`). Each image is fetched through the guarded fetcher (capped), read by
//! [`crate::image::decode`] (format sniffed, pixels capped; a refused image is recorded with its
//! reason and the post is still checked), hashed (SHA-256 for the cache, a perceptual hash for
//! near-duplicates), read by OCR (tesseract) and captioned by a vision-capable model (caption and
//! the people it recognises); then the main model merges caption, people, OCR text and alt
//! text into the description the later steps read ("A screenshot of …", "A photo of …").
//! Without a vision model (or when it fails), the description comes from OCR and alt text, and
//! the record says so. What an image yields (caption, people, OCR, hashes) is cached by its
//! SHA-256, so the same picture posted again costs no OCR and no vision call.

use std::sync::Arc;

use base64::Engine;
use minijinja::context;
use serde::{Deserialize, Serialize};

use super::{usage_of, Muse};
use crate::fetch::Fetcher;
use crate::image::ocr::Ocr;
use crate::image::{self, ImageLimits};
use crate::llm::{ChatMessage, LlmClient};
use crate::model::{ImageDescription, Media, Post, Retrieval, Usage};
use crate::pipeline::PipelineError;
use crate::store::Store;

/// What the step needs besides the main model.
pub struct Images {
    pub fetcher: Fetcher,
    pub limits: ImageLimits,
    pub max_images: usize,
    pub ocr: Option<Ocr>,
    /// The vision-capable model (`[vision]`), when enabled.
    pub vision: Option<LlmClient>,
    pub store: Option<Store>,
    /// `file://` images may be read (`musebot check` only).
    pub local_files: bool,
    /// The image-embedding model (`relevance.image_model`) and its threshold, when configured.
    pub embedder: Option<Arc<crate::image::embed::ImageEmbedder>>,
    pub image_threshold: f32,
}

/// What an image yields whatever post it is in: cached by SHA-256.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Read {
    phash: Option<String>,
    #[serde(default)]
    embedding: Option<Vec<f32>>,
    caption: Option<String>,
    people: Vec<String>,
    ocr: Option<String>,
    vision_error: Option<String>,
}

/// Longest side of the copy sent to the vision model.
const VISION_SIDE: u32 = 1024;

pub async fn run(m: &Muse, post: &Post, r: &mut Retrieval) -> Result<Usage, PipelineError> {
    let Some(images) = m.images.clone() else {
        r.images = Some(Vec::new());
        return Ok(Usage::default());
    };
    let mut usage = Usage::default();
    let mut out = Vec::new();
    for media in post
        .media
        .iter()
        .filter(|x| x.kind.is_picture())
        .take(images.max_images)
    {
        let (d, u) = describe(m, &images, media, post.language.as_deref()).await?;
        // The local reverse image search finds this picture in this post from now on.
        if let (Some(store), Some(phash), Some(url)) = (&images.store, &d.phash, &post.url) {
            if let Err(e) = store.add_image(phash, url) {
                tracing::warn!(error = %e, "image index write failed");
            }
        }
        usage.prompt_tokens += u.prompt_tokens;
        usage.completion_tokens += u.completion_tokens;
        tracing::info!(
            url = %d.url,
            made_from = %d.made_from,
            refused = d.refused.as_deref().unwrap_or(""),
            "image described"
        );
        out.push(d);
    }
    r.images = Some(out);
    Ok(usage)
}

async fn describe(
    m: &Muse,
    images: &Arc<Images>,
    media: &Media,
    language: Option<&str>,
) -> Result<(ImageDescription, Usage), PipelineError> {
    let mut d = ImageDescription {
        url: media.url.clone(),
        alt: media.alt.clone(),
        ..Default::default()
    };
    let bytes = match load(images, &media.url).await {
        Ok(b) => b,
        Err(e) => return finish(m, d, Some(e)).await,
    };
    let sha = image::content_hash(&bytes);
    d.sha256 = Some(sha.clone());
    // Read in the post's language where its OCR pack is configured; a reading in other packs
    // is cached apart.
    let languages = images
        .ocr
        .as_ref()
        .map(|o| (o.languages_for(language), o.languages.clone()));
    let key = match &languages {
        Some((own, all)) if own != all => format!("{sha}:{own}"),
        _ => sha.clone(),
    };
    let cached = images.store.as_ref().and_then(|s| s.cache_get::<Read>("image", &key));
    let read = match cached {
        Some(read) => read,
        None => {
            let limits = images.limits;
            let decoded = tokio::task::spawn_blocking(move || image::decode(&bytes, limits))
                .await
                .unwrap_or_else(|e| Err(image::Refusal::Corrupt(format!("the decoder stopped: {e}"))));
            let decoded = match decoded {
                Ok(d) => d,
                Err(refusal) => return finish(m, d, Some(refusal.to_string())).await,
            };
            let prompt = m.prompts.render("describe_vision.user.j2", context! {})?;
            let packs = languages.as_ref().map(|(own, _)| own.as_str()).unwrap_or("");
            let read = read_image(images, &decoded.image, prompt, packs).await;
            if let Some(store) = &images.store {
                if let Err(e) = store.cache_put("image", &key, &read) {
                    tracing::warn!(error = %e, "image cache write failed");
                }
            }
            read
        }
    };
    d.phash = read.phash;
    d.embedding = read.embedding;
    d.caption = read.caption;
    d.people = read.people;
    d.ocr = read.ocr;
    d.vision_error = read.vision_error;
    finish(m, d, None).await
}

/// The image's bytes, fetched through the guarded fetcher (or read from a local file for
/// `musebot check --image FILE`).
async fn load(images: &Images, url: &str) -> Result<Vec<u8>, String> {
    match url.strip_prefix("file://").filter(|_| images.local_files) {
        Some(path) => read_file(path, images.limits.max_bytes),
        None => images
            .fetcher
            .fetch_image(url, images.limits.max_bytes)
            .await
            .map(|(_, b)| b)
            .map_err(|e| format!("not fetched: {e}")),
    }
}

/// The picture at `url` as the vision model receives it (a JPEG data URL, longest side
/// 1024), for the out-of-context agents; `None` (logged) when it cannot be read again.
pub(crate) async fn vision_copy(images: &Images, url: &str) -> Option<String> {
    let bytes = load(images, url)
        .await
        .map_err(|e| tracing::warn!(url, error = %e, "the picture could not be read again for the agents"))
        .ok()?;
    let limits = images.limits;
    tokio::task::spawn_blocking(move || image::decode(&bytes, limits).ok().and_then(|d| vision_jpeg(&d.image)))
        .await
        .ok()
        .flatten()
}

/// A local image (`musebot check --image FILE`), at most `max` bytes.
fn read_file(path: &str, max: usize) -> Result<Vec<u8>, String> {
    let len = std::fs::metadata(path)
        .map_err(|e| format!("not read: {path}: {e}"))?
        .len();
    if len as usize > max {
        return Err(format!("not read: larger than {max} bytes"));
    }
    std::fs::read(path).map_err(|e| format!("not read: {path}: {e}"))
}

/// Hashes, OCR and the vision caption of a decoded image (each failure recorded, none fatal).
async fn read_image(images: &Images, img: &::image::DynamicImage, prompt: String, packs: &str) -> Read {
    let mut read = Read::default();
    let copy = img.clone();
    let (phash, jpeg) = tokio::task::spawn_blocking(move || (image::perceptual_hash(&copy), vision_jpeg(&copy)))
        .await
        .unwrap_or_default();
    read.phash = Some(phash).filter(|h| !h.is_empty());
    if let Some(embedder) = images.embedder.clone() {
        let copy = img.clone();
        match tokio::task::spawn_blocking(move || embedder.embed(&copy)).await {
            Ok(Ok(v)) => read.embedding = Some(v),
            Ok(Err(e)) => tracing::warn!(error = %e, "the image model failed; the perceptual hash decides"),
            Err(e) => tracing::warn!(error = %e, "the image model stopped"),
        }
    }
    if let Some(ocr) = &images.ocr {
        match ocr.read_in(img, packs).await {
            Ok(text) => read.ocr = Some(text).filter(|t| !t.trim().is_empty()),
            Err(e) => tracing::warn!(error = %e, "OCR failed; the description goes without it"),
        }
    }
    match (&images.vision, jpeg) {
        (Some(vision), Some(jpeg)) => match caption(vision, &prompt, &jpeg).await {
            Ok((c, p)) => {
                read.caption = Some(c).filter(|c| !c.trim().is_empty());
                read.people = p;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the vision model failed; describing from OCR and alt text");
                read.vision_error = Some(e.to_string());
            }
        },
        (Some(_), None) => read.vision_error = Some("the image could not be re-encoded for the vision model".into()),
        (None, _) => {}
    }
    read
}

/// The image as a JPEG data URL no larger than [`VISION_SIDE`] on its long side.
fn vision_jpeg(img: &::image::DynamicImage) -> Option<String> {
    let small = if img.width().max(img.height()) > VISION_SIDE {
        img.resize(VISION_SIDE, VISION_SIDE, ::image::imageops::FilterType::Triangle)
    } else {
        img.clone()
    };
    let mut out = std::io::Cursor::new(Vec::new());
    small.to_rgb8().write_to(&mut out, ::image::ImageFormat::Jpeg).ok()?;
    Some(format!(
        "data:image/jpeg;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(out.into_inner())
    ))
}

/// The vision model's caption and the people it recognises.
async fn caption(vision: &LlmClient, prompt: &str, data_url: &str) -> Result<(String, Vec<String>), PipelineError> {
    #[derive(Deserialize)]
    struct Answer {
        #[serde(default)]
        caption: String,
        #[serde(default)]
        people: Vec<String>,
    }
    let schema = serde_json::json!({"type": "object", "properties": {"caption": {"type": "string"}, "people": {"type": "array", "items": {"type": "string"}}}, "required": ["caption", "people"]});
    let c = vision
        .chat_json(
            &[ChatMessage::user_with_images(prompt, &[data_url.to_string()])],
            "image",
            &schema,
        )
        .await?;
    let text = c.text.trim();
    let json = text.find('{').and_then(|s| text.rfind('}').map(|e| &text[s..=e]));
    match json.and_then(|j| serde_json::from_str::<Answer>(j).ok()) {
        Some(a) => Ok((
            a.caption,
            a.people.into_iter().filter(|p| !p.trim().is_empty()).take(10).collect(),
        )),
        None => Ok((text.chars().take(300).collect(), Vec::new())),
    }
}

/// Merges what was read into the description (one call to the main model) and says how it was
/// made. `refused`: why the image itself was not read (its alt text may still describe it).
async fn finish(
    m: &Muse,
    mut d: ImageDescription,
    refused: Option<String>,
) -> Result<(ImageDescription, Usage), PipelineError> {
    d.refused = refused;
    if d.caption.is_none() && d.ocr.is_none() && d.alt.is_none() {
        d.made_from = "not read".into();
        return Ok((d, Usage::default()));
    }
    d.made_from = if d.caption.is_some() {
        "vision".into()
    } else if d.ocr.is_some() {
        "ocr and alt text".into()
    } else {
        "alt text only".into()
    };
    let system = m.prompts.render("describe_merge.system.j2", context! {})?;
    let user = m.prompts.render(
        "describe_merge.user.j2",
        context! { caption => d.caption, people => d.people, ocr => d.ocr, alt => d.alt },
    )?;
    let c = m
        .llm
        .chat(&[ChatMessage::system(system), ChatMessage::user(user)])
        .await?;
    let text = c
        .text
        .trim()
        .trim_start_matches("description:")
        .trim()
        .trim_matches('"');
    d.description = Some(text.chars().take(1200).collect()).filter(|t: &String| !t.is_empty());
    Ok((d, usage_of(&c)))
}

/// The post as the later steps read it: each image's alt text replaced by its description.
pub fn with_descriptions(post: &Post, r: &Retrieval) -> Post {
    let mut post = post.clone();
    for d in r.images.iter().flatten() {
        if let Some(media) = post.media.iter_mut().find(|x| x.url == d.url) {
            if let Some(desc) = &d.description {
                media.alt = Some(desc.clone());
            }
        }
    }
    post
}

/// Whether any image was described (Muse asks for 5 queries then, else 3).
pub fn has_descriptions(r: &Retrieval) -> bool {
    r.images.iter().flatten().any(|d| d.description.is_some())
}
