//! The language a question is asked in, and the agent's own sentences in Chinese and English.

use serde::{Deserialize, Serialize};

/// The two languages KnowHub answers in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    Zh,
    En,
}

impl Lang {
    /// Chinese when a real share of the letters are CJK ideographs (a Chinese question with
    /// an English product name is still Chinese).
    pub fn detect(text: &str) -> Lang {
        let cjk = text.chars().filter(|c| is_cjk(*c)).count();
        let latin = text.chars().filter(|c| c.is_ascii_alphabetic()).count();
        if cjk > 0 && cjk * 3 >= latin.min(cjk * 10) / 2 {
            Lang::Zh
        } else {
            Lang::En
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            Lang::Zh => "zh",
            Lang::En => "en",
        }
    }

    pub fn from_code(code: &str) -> Lang {
        if code == "zh" { Lang::Zh } else { Lang::En }
    }

    /// The answer when the authorised material does not answer the question.
    pub fn no_evidence(self) -> &'static str {
        match self {
            Lang::Zh => "无法从你有权访问的资料中确认这个问题的答案。",
            Lang::En => "I could not find an answer to this in the material you have access to.",
        }
    }

    pub fn clarify(self) -> &'static str {
        match self {
            Lang::Zh => {
                "你是想查询内部文档内容，还是想统计表格或数据库里的数据？请把问题说得更具体一些。"
            }
            Lang::En => {
                "Do you want to look something up in the documents, or count or list data from the spreadsheets and databases? Please ask a more specific question."
            }
        }
    }

    pub fn refuse(self) -> &'static str {
        match self {
            Lang::Zh => {
                "这个请求超出了 KnowHub 的能力或权限范围：它只读取你有权访问的资料，不修改数据，也不提供他人的凭据。"
            }
            Lang::En => {
                "That request is outside what KnowHub does: it only reads material you may access, never changes data, and never hands out anyone's credentials."
            }
        }
    }

    pub fn tool_error(self) -> &'static str {
        match self {
            Lang::Zh => "检索或查询出错，暂时无法回答。请稍后重试。",
            Lang::En => {
                "Searching or querying failed, so I cannot answer right now. Please try again."
            }
        }
    }

    pub fn permission_denied(self) -> &'static str {
        match self {
            Lang::Zh => "你没有权限执行这个请求。",
            Lang::En => "You are not allowed to make this request.",
        }
    }

    /// Introduces an extractive answer (no language model).
    /// The heading of the sentences an extractive answer shows after the one that answers.
    pub fn extractive_more(self) -> &'static str {
        match self {
            Lang::Zh => "资料中还提到：",
            Lang::En => "The sources also say:",
        }
    }

    /// Introduces a SQL result in an extractive answer.
    pub fn sql_result_intro(self) -> &'static str {
        match self {
            Lang::Zh => "查询结果",
            Lang::En => "Query result",
        }
    }
}

pub(crate) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF | 0x20000..=0x2FA1F)
}

pub(crate) fn is_cjk_punct(c: char) -> bool {
    matches!(c, '。' | '！' | '？' | '；' | '，' | '：')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_the_question_language() {
        for (q, want) in [
            ("How many days of annual leave?", Lang::En),
            ("试用期多长？", Lang::Zh),
            (
                "Kubernetes 中 Deployment 的 rolling update 默认策略是什么？",
                Lang::Zh,
            ),
            ("What does 年假 mean in the handbook?", Lang::En),
            ("", Lang::En),
        ] {
            assert_eq!(Lang::detect(q), want, "{q}");
        }
    }
}
