//! The `q` parameter of a searchable resource: the words a full-text search looks for.
//!
//! A word is a run of letters and digits (any script); everything else separates words, as
//! both backends' tokenizers separate them, so `O'Brien` is `o` and `brien`. Words are
//! compared without case. A word written with a trailing `*` (`sava*`) matches every word that
//! starts with it. A row matches when each word appears in one of the searchable members the
//! caller may read. Nothing of the client's text reaches SQL but letters, digits and the
//! prefix mark.

use crate::error::Error;

/// The parameter's name.
pub(crate) const PARAM: &str = "q";

/// The most words one search looks for.
pub(crate) const MAX_WORDS: usize = 16;

/// The longest `q`, in characters.
pub(crate) const MAX_CHARS: usize = 256;

/// One word of a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The word, lower-cased: letters and digits only.
    pub(crate) text: String,
    /// Whether it matches every word that starts with it (`sava*`).
    pub(crate) prefix: bool,
}

/// The words of a `q` parameter, in order, without repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Words(pub(crate) Vec<Word>);

impl Words {
    /// The words of `value`; `None` when it holds only spaces (no search).
    ///
    /// # Errors
    ///
    /// A 400 naming `q`: longer than [`MAX_CHARS`], more than [`MAX_WORDS`] words, or text
    /// with no letter or digit.
    pub(crate) fn parse(value: &str) -> Result<Option<Words>, Error> {
        if value.trim().is_empty() {
            return Ok(None);
        }
        if value.chars().count() > MAX_CHARS {
            return Err(Error::bad_param(
                PARAM,
                format!("at most {MAX_CHARS} characters"),
            ));
        }
        let mut words: Vec<Word> = Vec::new();
        for token in value.split_whitespace() {
            let (body, prefix) = match token.strip_suffix('*') {
                Some(body) => (body, true),
                None => (token, false),
            };
            let parts: Vec<&str> = body
                .split(|c: char| !c.is_alphanumeric())
                .filter(|p| !p.is_empty())
                .collect();
            let last = parts.len().saturating_sub(1);
            for (i, part) in parts.into_iter().enumerate() {
                let word = Word {
                    text: part.to_lowercase(),
                    prefix: prefix && i == last,
                };
                if !words.contains(&word) {
                    words.push(word);
                }
            }
        }
        if words.is_empty() {
            return Err(Error::bad_param(
                PARAM,
                "expected words to search for (letters or digits)",
            ));
        }
        if words.len() > MAX_WORDS {
            return Err(Error::bad_param(
                PARAM,
                format!("at most {MAX_WORDS} words"),
            ));
        }
        Ok(Some(Words(words)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(q: &str) -> Vec<(String, bool)> {
        Words::parse(q)
            .unwrap()
            .unwrap()
            .0
            .into_iter()
            .map(|w| (w.text, w.prefix))
            .collect()
    }

    #[test]
    fn words_are_letters_and_digits_lower_cased_without_repeats() {
        assert_eq!(
            words("  Rex  O'Brien rex 42 "),
            [
                ("rex".to_owned(), false),
                ("o".to_owned(), false),
                ("brien".to_owned(), false),
                ("42".to_owned(), false)
            ]
        );
        assert_eq!(words("Ñandú"), [("ñandú".to_owned(), false)]);
    }

    #[test]
    fn a_trailing_star_makes_the_last_word_a_prefix() {
        assert_eq!(
            words("red-pan* cat"),
            [
                ("red".to_owned(), false),
                ("pan".to_owned(), true),
                ("cat".to_owned(), false)
            ]
        );
    }

    #[test]
    fn blank_is_no_search_and_punctuation_alone_is_refused() {
        assert_eq!(Words::parse("   ").unwrap(), None);
        for bad in ["\"*\"", "--", "*"] {
            let e = Words::parse(bad).unwrap_err();
            assert!(e.to_string().contains("`q`"), "{bad}: {e}");
        }
        let many: Vec<String> = (0..17).map(|i| format!("w{i}")).collect();
        assert!(Words::parse(&many.join(" ")).is_err());
        assert!(Words::parse(&many[..16].join(" ")).is_ok());
        assert!(Words::parse(&"a".repeat(257)).is_err());
    }
}
