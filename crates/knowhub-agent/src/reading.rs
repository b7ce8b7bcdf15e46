//! Reading for meaning: a model is asked, sentence by sentence, whether the evidence's best
//! sentences answer the question. The extractive test is one of shared words, and an
//! on-topic question the documents do not answer ("Which version first introduced layer
//! groups?") shares enough of them with some sentence ("Version 0.99 also introduced a new
//! native file format") to be answered with it. A model of a billion weights or more tells
//! the two apart; the default 0.5B says "no" of a third of the sentences that answer, so it
//! is not asked.
//!
//! A local model gives its probabilities of "yes" and "no": then every sentence is read and
//! the one it is surest of leads the answer, which holds the answer more often than the first
//! sentence read as answering (docs/measurements.md).

use knowhub_llm::{Llm, Message};

use crate::extractive::Part;

/// Models with fewer weights than this are not asked: the 0.5B says "no" of a third of the
/// sentences that answer, and its probability of "yes" ranks sentences that answer no higher
/// than those that do not; the 1.5B tells them apart (docs/measurements.md).
pub(crate) const MIN_PARAMETERS: u64 = 1_000_000_000;

/// Whether `llm` reads well enough to be asked: a local model of [`MIN_PARAMETERS`] or more,
/// or a server's model (its size is not known, and servers run larger models than this
/// machine's).
pub(crate) fn reads_for_meaning(llm: &dyn Llm) -> bool {
    llm.parameters().is_none_or(|n| n >= MIN_PARAMETERS)
}

/// Whether a sentence answers, given how likely the model found "yes" against "no" (see
/// `Deps::ask_yes_no`): when "yes" is the likelier word. A stricter line refuses a few more
/// unanswerable questions but loses more answers than that (docs/measurements.md).
pub(crate) fn answers(yes: f32) -> bool {
    yes >= 0.5
}

/// What the model was told. The reply is one word so that a question costs one prompt and
/// a token or two.
const SYSTEM: &str = "You check whether a text answers a question. Reply with one word: yes or no.";

/// The messages that ask whether `part` (a sentence and the list it introduces) answers
/// `question`.
pub(crate) fn messages(question: &str, part: &Part) -> Vec<Message> {
    let (sentence, _, items) = part;
    let mut text = sentence.trim().to_string();
    for item in items {
        text.push('\n');
        text.push_str(item.trim());
    }
    vec![
        Message::system(SYSTEM),
        Message::user(format!(
            "Text: {text}\n\nQuestion: {}\n\nCan the question be answered from the text alone? \
             Answer yes or no.",
            question.trim()
        )),
    ]
}

/// The model's verdict in `reply`: `Some(true)` for yes, `Some(false)` for no, `None` when the
/// reply is neither (read as no verdict, so nothing is withheld on it).
pub(crate) fn verdict(reply: &str) -> Option<bool> {
    let reply = reply.trim_start();
    let word: String = reply
        .chars()
        .take_while(|c| c.is_ascii_alphabetic())
        .collect::<String>()
        .to_ascii_lowercase();
    match word.as_str() {
        "yes" => Some(true),
        "no" => Some(false),
        "" if reply.starts_with(['是', '能']) || reply.starts_with("可以") => Some(true),
        "" if reply.starts_with(['否', '不']) => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_by_their_first_word() {
        let cases = [
            ("yes", Some(true)),
            (" Yes.", Some(true)),
            ("YES, it says", Some(true)),
            ("No.", Some(false)),
            ("no", Some(false)),
            ("是", Some(true)),
            ("可以。", Some(true)),
            ("不能", Some(false)),
            ("否。", Some(false)),
            ("Nothing", None),
            ("yesterday", None),
            ("", None),
            ("The text says", None),
        ];
        for (reply, want) in cases {
            assert_eq!(verdict(reply), want, "{reply:?}");
        }
    }

    #[test]
    fn a_sentence_is_shown_with_the_list_it_introduces() {
        let part: Part = (
            "Roll back when any of these is true:".into(),
            1,
            vec!["errors above 2%".into(), "p99 above 1 s".into()],
        );
        let m = messages("When do we roll back?", &part);
        assert_eq!(m.len(), 2);
        let user = &m[1].content;
        assert!(
            user.contains("Roll back when any of these is true:\nerrors above 2%\np99 above 1 s")
        );
        assert!(user.contains("Question: When do we roll back?"));
    }
}
