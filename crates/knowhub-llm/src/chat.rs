//! The ChatML prompt format, shared by Qwen2.5 and SmolLM2.
//!
//! Both model families were instruction-tuned on ChatML:
//!
//! ```text
//! <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n
//! ```
//!
//! Their GGUFs carry a Jinja `tokenizer.chat_template`; rather than embedding a Jinja engine we
//! check that the template is ChatML (it names `<|im_start|>` and `<|im_end|>`) and format with
//! this module. What the templates add beyond plain ChatML is a default system prompt when the
//! conversation has none (Qwen: "You are Qwen, created by Alibaba Cloud…", SmolLM: "You are a
//! helpful AI assistant named SmolLM…"); [`default_system_prompt`] lifts that literal out of the
//! template so the models see the prompt they were trained with.

use crate::{Message, Role};

/// Opens a turn.
pub(crate) const IM_START: &str = "<|im_start|>";
/// Closes a turn.
pub(crate) const IM_END: &str = "<|im_end|>";

/// The messages a model sees: `messages`, with `default_system` in front when there is no system
/// message at the start.
pub(crate) fn with_default_system(
    messages: &[Message],
    default_system: Option<&str>,
) -> Vec<Message> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    if let Some(system) = default_system
        && messages.first().map(|m| m.role) != Some(Role::System)
    {
        out.push(Message::system(system));
    }
    out.extend(messages.iter().cloned());
    out
}

/// The ChatML text of a conversation, ending with the open assistant turn the model completes.
///
/// `default_system` is put in front when the conversation does not start with a system message
/// (as the models' own templates do).
pub fn format_chatml(messages: &[Message], default_system: Option<&str>) -> String {
    let mut out = String::new();
    for m in with_default_system(messages, default_system) {
        out.push_str(IM_START);
        out.push_str(m.role.as_str());
        out.push('\n');
        out.push_str(&m.content);
        out.push_str(IM_END);
        out.push('\n');
    }
    out.push_str(IM_START);
    out.push_str("assistant\n");
    out
}

/// Whether a Jinja chat template produces ChatML.
pub(crate) fn is_chatml_template(template: &str) -> bool {
    template.contains(IM_START) && template.contains(IM_END)
}

/// The literal default system prompt of a ChatML template: the first
/// `<|im_start|>system\n…<|im_end|>` whose text is a plain literal (no Jinja expression, no
/// quote), as in Qwen's and SmolLM's templates. `None` when the template has none.
pub(crate) fn default_system_prompt(template: &str) -> Option<String> {
    let head = format!("{IM_START}system");
    let mut rest = template;
    while let Some(at) = rest.find(&head) {
        rest = &rest[at + head.len()..];
        // The newline is a real one or, inside a Jinja string literal, an escaped `\n`.
        let body = rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\\n"));
        let Some(body) = body else { continue };
        let Some(end) = body.find(IM_END) else {
            continue;
        };
        let text = &body[..end];
        let literal = !text.is_empty()
            && !text.contains(['\'', '"', '{', '}', '\n'])
            && !text.contains("\\n");
        if literal {
            return Some(text.to_owned());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chatml_layout() {
        let text = format_chatml(
            &[
                Message::system("Be brief."),
                Message::user("你好"),
                Message::assistant("Hi."),
                Message::user("2+2?"),
            ],
            Some("ignored: there is a system message"),
        );
        assert_eq!(
            text,
            "<|im_start|>system\nBe brief.<|im_end|>\n\
             <|im_start|>user\n你好<|im_end|>\n\
             <|im_start|>assistant\nHi.<|im_end|>\n\
             <|im_start|>user\n2+2?<|im_end|>\n\
             <|im_start|>assistant\n"
        );
    }

    #[test]
    fn chatml_default_system_only_without_one() {
        let text = format_chatml(&[Message::user("hi")], Some("You are helpful."));
        assert_eq!(
            text,
            "<|im_start|>system\nYou are helpful.<|im_end|>\n\
             <|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
        let text = format_chatml(&[Message::user("hi")], None);
        assert_eq!(
            text,
            "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
        );
    }

    #[test]
    fn default_system_from_templates() {
        let smol = "{% for message in messages %}{% if loop.first and messages[0]['role'] != \
            'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, \
            trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] \
            + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}";
        assert_eq!(
            default_system_prompt(smol).as_deref(),
            Some("You are a helpful AI assistant named SmolLM, trained by Hugging Face")
        );
        // Qwen's: escaped newlines, and two earlier `system` heads that are expressions.
        let qwen = "{%- if tools %}\n    {{- '<|im_start|>system\\n' }}\n    {%- if \
            messages[0]['role'] == 'system' %}\n {{- '<|im_start|>system\\n' + \
            messages[0]['content'] + '<|im_end|>\\n' }}\n {%- else %}\n {{- \
            '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful \
            assistant.<|im_end|>\\n' }}";
        assert_eq!(
            default_system_prompt(qwen).as_deref(),
            Some("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.")
        );
        assert!(is_chatml_template(qwen));
        assert_eq!(default_system_prompt("{{ messages }}"), None);
        assert!(!is_chatml_template("[INST] {{ m }} [/INST]"));
    }
}
