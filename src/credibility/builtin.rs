//! The project's own small table of major publishers, so the bot works with no ratings file.
//! Factuality and bias follow Media Bias/Fact Check's published ratings as the project read them
//! (2024–2025); operators who need more load a ratings file (`[credibility] files`), which
//! overrides this table domain by domain.

use super::{Bias, Factuality};

use Bias::*;
use Factuality::*;

pub const TABLE: &[(&str, Factuality, Bias)] = &[
    // Wire services and reference publishers.
    ("reuters.com", VeryHigh, LeastBiased),
    ("apnews.com", VeryHigh, LeastBiased),
    ("afp.com", VeryHigh, LeastBiased),
    ("factcheck.afp.com", VeryHigh, LeastBiased),
    ("pewresearch.org", VeryHigh, LeastBiased),
    ("c-span.org", VeryHigh, LeastBiased),
    ("britannica.com", High, LeastBiased),
    // Public health and science bodies.
    ("cdc.gov", VeryHigh, ProScience),
    ("nih.gov", VeryHigh, ProScience),
    ("who.int", High, ProScience),
    ("nasa.gov", VeryHigh, ProScience),
    ("noaa.gov", VeryHigh, ProScience),
    ("nature.com", VeryHigh, ProScience),
    ("science.org", VeryHigh, ProScience),
    ("nejm.org", VeryHigh, ProScience),
    ("thelancet.com", VeryHigh, ProScience),
    ("bmj.com", VeryHigh, ProScience),
    ("scientificamerican.com", High, ProScience),
    ("newscientist.com", High, ProScience),
    ("sciencenews.org", VeryHigh, ProScience),
    ("nationalgeographic.com", High, ProScience),
    // Fact-checkers.
    ("factcheck.org", VeryHigh, LeastBiased),
    ("fullfact.org", VeryHigh, LeastBiased),
    ("snopes.com", High, LeftCenter),
    ("politifact.com", High, LeftCenter),
    ("leadstories.com", High, LeastBiased),
    ("science.feedback.org", VeryHigh, ProScience),
    ("healthfeedback.org", VeryHigh, ProScience),
    ("climatefeedback.org", VeryHigh, ProScience),
    // Fact-checkers of the table the project found no rating of its own reading for: IFCN
    // signatories, rated as the publishers beyond English are (high, least biased).
    ("checkyourfact.com", High, LeastBiased),
    ("truthorfiction.com", High, LeastBiased),
    ("aap.com.au", High, LeastBiased),
    // National and international news.
    ("bbc.co.uk", High, LeftCenter),
    ("bbc.com", High, LeftCenter),
    ("npr.org", High, LeftCenter),
    ("pbs.org", High, LeftCenter),
    ("nytimes.com", High, LeftCenter),
    ("washingtonpost.com", High, LeftCenter),
    ("theguardian.com", Mixed, LeftCenter),
    ("economist.com", High, LeftCenter),
    ("wsj.com", High, RightCenter),
    ("bloomberg.com", High, LeftCenter),
    ("ft.com", High, LeastBiased),
    ("thehill.com", High, LeastBiased),
    ("axios.com", High, LeftCenter),
    ("usatoday.com", MostlyFactual, LeftCenter),
    ("forbes.com", MostlyFactual, RightCenter),
    ("abcnews.go.com", High, LeftCenter),
    ("cbsnews.com", High, LeftCenter),
    ("nbcnews.com", High, LeftCenter),
    ("dw.com", VeryHigh, LeftCenter),
    ("france24.com", High, LeftCenter),
    ("aljazeera.com", Mixed, LeftCenter),
    ("cnn.com", MostlyFactual, Left),
    ("msnbc.com", Mixed, Left),
    ("foxnews.com", Mixed, Right),
    ("nypost.com", Mixed, RightCenter),
    ("dailymail.co.uk", Low, Right),
    ("breitbart.com", Mixed, ExtremeRight),
    ("infowars.com", VeryLow, ConspiracyPseudoscience),
    ("naturalnews.com", VeryLow, ConspiracyPseudoscience),
    ("theonion.com", Low, Satire),
    ("babylonbee.com", Low, Satire),
    ("wikipedia.org", Mixed, LeastBiased),
];
