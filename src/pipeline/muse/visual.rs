//! Visual relevance (Muse: a page is relevant when its text is, or when its main image is the
//! post's picture). A page's main image is the one it announces for sharing (`og:image`, else
//! `twitter:image`); it is fetched through the guard with the image caps, hashed, and compared
//! with the post's images by perceptual hash: within [`crate::image::SAME_PICTURE`] bits it is
//! the same picture (resized, re-encoded, cropped or captioned). Every main image read goes
//! into the local reverse-image index under its page.

use url::Url;

use super::describe::Images;

/// The page's main image URL, resolved against the page's URL.
pub fn main_image(html: &str, page: &Url) -> Option<String> {
    let mut end = html.len().min(200_000);
    while !html.is_char_boundary(end) {
        end -= 1;
    }
    let head = &html[..end];
    let lower = head.to_ascii_lowercase();
    let metas: Vec<&str> = lower
        .match_indices("<meta")
        .filter_map(|(i, _)| lower[i..].find('>').map(|e| &head[i..i + e]))
        .collect();
    for name in ["og:image", "twitter:image"] {
        for tag in &metas {
            let named = attr(tag, "property").or_else(|| attr(tag, "name"));
            if !named.is_some_and(|n| n.eq_ignore_ascii_case(name)) {
                continue;
            }
            if let Some(u) = attr(tag, "content").and_then(|c| page.join(c.trim()).ok()) {
                if matches!(u.scheme(), "http" | "https") {
                    return Some(u.to_string());
                }
            }
        }
    }
    None
}

/// The value of `name="…"` (or '…') in a tag (the attribute, not a longer one ending so).
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let lower = tag.to_ascii_lowercase();
    let pat = format!("{name}=");
    let i = lower
        .match_indices(&pat)
        .map(|(i, _)| i)
        .find(|&i| i > 0 && lower.as_bytes()[i - 1].is_ascii_whitespace())?
        + pat.len();
    let rest = &tag[i..];
    let quote = rest.chars().next()?;
    if quote == '"' || quote == '\'' {
        let end = rest[1..].find(quote)?;
        Some(&rest[1..1 + end])
    } else {
        Some(rest.split(|c: char| c.is_whitespace() || c == '/').next().unwrap_or(""))
    }
}

/// How close a page's main image is to the post's pictures.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Closeness {
    /// The smallest perceptual-hash distance, bits.
    pub bits: Option<u32>,
    /// The highest cosine of the image model's embeddings (when a model is configured).
    pub cosine: Option<f32>,
}

impl Closeness {
    /// Whether the page shows the post's picture: by the image model when one is configured,
    /// else by the perceptual hash.
    pub fn same_picture(&self, images: &Images) -> bool {
        match (images.embedder.is_some(), self.cosine) {
            (true, Some(c)) => c >= images.image_threshold,
            (true, None) | (false, _) => self.bits.is_some_and(|d| d <= crate::image::SAME_PICTURE),
        }
    }
}

/// How close the page's main image is to the post's pictures (`None` when it cannot be read),
/// indexing the image under the page.
pub async fn closeness(
    images: &Images,
    image_url: &str,
    page_url: &str,
    post_hashes: &[String],
    post_embeddings: &[Vec<f32>],
) -> Option<Closeness> {
    let (_, bytes) = images
        .fetcher
        .fetch_image(image_url, images.limits.max_bytes)
        .await
        .ok()?;
    let limits = images.limits;
    let embedder = images.embedder.clone().filter(|_| !post_embeddings.is_empty());
    let (phash, embedding) = tokio::task::spawn_blocking(move || {
        let d = crate::image::decode(&bytes, limits).ok()?;
        let embedding = embedder.and_then(|e| e.embed(&d.image).ok());
        Some((crate::image::perceptual_hash(&d.image), embedding))
    })
    .await
    .ok()
    .flatten()?;
    if let Some(store) = &images.store {
        let _ = store.add_image(&phash, page_url);
    }
    let bits = post_hashes
        .iter()
        .filter_map(|h| crate::image::distance(h, &phash))
        .min();
    let cosine = embedding.and_then(|e| {
        post_embeddings
            .iter()
            .map(|p| crate::relevance::cosine(p, &e))
            .reduce(f32::max)
    });
    Some(Closeness { bits, cosine })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_main_image_is_read_from_its_meta_tag() {
        let page = Url::parse("https://news.example/world/story").unwrap();
        let html = r#"<html><head><meta name="og:image-alt" content="x"><meta content='/img/a.jpg' property='og:image'></head>"#;
        assert_eq!(
            main_image(html, &page).as_deref(),
            Some("https://news.example/img/a.jpg")
        );
        let twitter = r#"<meta name="twitter:image" content="https://cdn.example/b.png">"#;
        assert_eq!(main_image(twitter, &page).as_deref(), Some("https://cdn.example/b.png"));
        assert_eq!(main_image("<p>og:image</p>", &page), None);
        assert_eq!(
            main_image(r#"<meta property="og:image" content="javascript:alert(1)">"#, &page),
            None
        );
    }
}
