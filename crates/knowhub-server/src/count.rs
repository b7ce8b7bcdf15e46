//! Counts in JSON bodies (`top_k`, `limit`): JSON has one number type, so `5.0` is the
//! integer 5 for clients (and for JSON Schema), even where serde would want `5`.

use serde::{Deserialize, Deserializer, de::Error as _};

/// An optional count: a non-negative integer, also when written as `5.0`.
pub(crate) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<usize>, D::Error> {
    let Some(n) = Option::<serde_json::Number>::deserialize(d)? else {
        return Ok(None);
    };
    if let Some(u) = n.as_u64() {
        return usize::try_from(u).map(Some).map_err(D::Error::custom);
    }
    match n.as_f64() {
        // 2^53: beyond it a float no longer names one integer.
        Some(f) if f >= 0.0 && f.fract() == 0.0 && f <= 9_007_199_254_740_992.0 => {
            Ok(Some(f as usize))
        }
        _ => Err(D::Error::custom(format!(
            "expected a non-negative whole number, not {n}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Deserialize)]
    struct Body {
        #[serde(default, deserialize_with = "super::optional")]
        top_k: Option<usize>,
    }

    #[test]
    fn counts_accept_whole_numbers_in_either_spelling() {
        let table = [
            (r#"{}"#, Some(None)),
            (r#"{"top_k": null}"#, Some(None)),
            (r#"{"top_k": 5}"#, Some(Some(5))),
            (r#"{"top_k": 5.0}"#, Some(Some(5))),
            (r#"{"top_k": 5.5}"#, None),
            (r#"{"top_k": -1}"#, None),
            (r#"{"top_k": -1.0}"#, None),
            (r#"{"top_k": 1e300}"#, None),
            (r#"{"top_k": "5"}"#, None),
        ];
        for (json, want) in table {
            let got = serde_json::from_str::<Body>(json).ok().map(|b| b.top_k);
            assert_eq!(got, want, "{json}");
        }
    }
}
