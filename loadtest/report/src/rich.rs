//! Sentences with emphasis, written once and laid out twice: as HTML (a [`maud::Render`], every
//! piece escaped) for the page and as Markdown for `summary.md`. The verdict, the trust strip and
//! the Little's-law line are built as [`Rich`] so the two files can never say different things.

use maud::{Markup, Render, html};

/// A run of text pieces, each plain or strong.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rich(Vec<(bool, String)>);

impl Rich {
    pub fn new() -> Rich {
        Rich::default()
    }

    /// Appends plain text.
    pub fn plain(mut self, text: impl AsRef<str>) -> Rich {
        self.0.push((false, text.as_ref().to_owned()));
        self
    }

    /// Appends emphasised text.
    pub fn strong(mut self, text: impl AsRef<str>) -> Rich {
        self.0.push((true, text.as_ref().to_owned()));
        self
    }

    /// Appends another sentence's pieces.
    pub fn then(mut self, other: Rich) -> Rich {
        self.0.extend(other.0);
        self
    }

    /// Markdown, `**…**` for the strong pieces.
    pub fn markdown(&self) -> String {
        self.0
            .iter()
            .map(|(strong, t)| match strong {
                true if !t.is_empty() => format!("**{t}**"),
                _ => t.clone(),
            })
            .collect()
    }
}

/// Escaped HTML, `<strong>` for the strong pieces.
impl Render for Rich {
    fn render(&self) -> Markup {
        html! {
            @for (strong, t) in &self.0 {
                @if *strong { strong { (t) } } @else { (t) }
            }
        }
    }
}

/// Joins sentences with `sep` (plain).
pub fn join(parts: impl IntoIterator<Item = Rich>, sep: &str) -> Rich {
    let mut out = Rich::new();
    for (i, p) in parts.into_iter().enumerate() {
        if i > 0 {
            out = out.plain(sep);
        }
        out = out.then(p);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sentence_two_layouts() {
        let r = Rich::new().plain("a <b> & ").strong("c<d>").plain(".");
        assert_eq!(
            r.render().into_string(),
            "a &lt;b&gt; &amp; <strong>c&lt;d&gt;</strong>."
        );
        assert_eq!(r.markdown(), "a <b> & **c<d>**.");
        let j = join([Rich::new().plain("x"), Rich::new().strong("y")], ", ");
        assert_eq!(j.markdown(), "x, **y**");
    }
}
