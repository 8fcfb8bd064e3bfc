//! An operator-configured ONNX image-embedding model (`relevance.image_model`; Muse used DINO
//! ViT-B/8 at cosine ≥ 0.7) for visual relevance, run with `ort` like the text model: the image
//! resized to `image_size` square, ImageNet-normalised, NCHW; the first output is the embedding
//! (`[1, D]`, or the first token of `[1, T, D]`, as ViT models give their CLS token), L2-normed.
//! No such model ships in any package here: without one, visual relevance is the perceptual
//! hash's.

use std::path::Path;
use std::sync::Mutex;

use image::DynamicImage;
use ndarray::{Array4, IxDyn};
use ort::session::Session;
use ort::value::Tensor;

const MEAN: [f32; 3] = [0.485, 0.456, 0.406];
const STD: [f32; 3] = [0.229, 0.224, 0.225];

pub struct ImageEmbedder {
    session: Mutex<Session>,
    size: u32,
}

impl ImageEmbedder {
    /// Loads `model` with the ONNX Runtime library at `dylib`.
    pub fn load(dylib: &Path, model: &Path, size: u32) -> Result<ImageEmbedder, String> {
        let env = crate::relevance::environment(dylib)
            .map_err(|e| format!("relevance.onnxruntime: cannot load {}: {e}", dylib.display()))?;
        let session = crate::relevance::session(&env, model)
            .map_err(|e| format!("relevance.image_model: cannot load {}: {e}", model.display()))?;
        Ok(ImageEmbedder {
            session: Mutex::new(session),
            size: size.max(1),
        })
    }

    /// The image's unit-length embedding (CPU work: call it off the async workers).
    pub fn embed(&self, image: &DynamicImage) -> Result<Vec<f32>, String> {
        let s = self.size;
        let rgb = image
            .resize_exact(s, s, image::imageops::FilterType::Triangle)
            .to_rgb8();
        let input = Array4::from_shape_fn((1, 3, s as usize, s as usize), |(_, c, y, x)| {
            let v = f32::from(rgb.get_pixel(x as u32, y as u32)[c]) / 255.0;
            (v - MEAN[c]) / STD[c]
        });
        let mut session = self.session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let name = session
            .inputs()
            .first()
            .map(|i| i.name().to_string())
            .ok_or("the image model has no input")?;
        let tensor = Tensor::from_array(input).map_err(|e| e.to_string())?;
        let outputs = session
            .run(ort::inputs![name.as_str() => tensor])
            .map_err(|e| e.to_string())?;
        let first = outputs.values().next().ok_or("the image model has no output")?;
        let out = first.try_extract_array::<f32>().map_err(|e| e.to_string())?;
        let out = out.into_dimensionality::<IxDyn>().map_err(|e| e.to_string())?;
        let mut v: Vec<f32> = match out.ndim() {
            2 => out.index_axis(ndarray::Axis(0), 0).iter().copied().collect(),
            3 => out
                .index_axis(ndarray::Axis(0), 0)
                .index_axis(ndarray::Axis(0), 0)
                .iter()
                .copied()
                .collect(),
            _ => out.iter().copied().collect(),
        };
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
        v.iter_mut().for_each(|x| *x /= norm);
        Ok(v)
    }
}
