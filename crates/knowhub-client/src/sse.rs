//! Server-sent events read from a blocking stream: the part of the format the server sends
//! (`event:` and `data:` lines, comments as keep-alives, a blank line ends an event).

use std::io::BufRead;

/// One event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub name: String,
    pub data: String,
}

/// The events of `reader`, until it ends.
pub(crate) fn events(reader: impl BufRead) -> impl Iterator<Item = std::io::Result<Event>> {
    let mut lines = reader.lines();
    std::iter::from_fn(move || {
        let mut name = String::new();
        let mut data: Option<String> = None;
        loop {
            let line = match lines.next() {
                None => {
                    // The stream ended: a last event without its blank line still counts.
                    return data.map(|data| {
                        Ok(Event {
                            name: take(name),
                            data,
                        })
                    });
                }
                Some(Err(e)) => return Some(Err(e)),
                Some(Ok(line)) => line,
            };
            if line.is_empty() {
                match data.take() {
                    Some(data) => {
                        return Some(Ok(Event {
                            name: take(name),
                            data,
                        }));
                    }
                    None => {
                        name.clear();
                        continue;
                    }
                }
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line.as_str(), ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => name = value.to_owned(),
                "data" => match data.as_mut() {
                    Some(d) => {
                        d.push('\n');
                        d.push_str(value);
                    }
                    None => data = Some(value.to_owned()),
                },
                _ => {}
            }
        }
    })
}

fn take(name: String) -> String {
    if name.is_empty() {
        "message".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_split_at_blank_lines_with_multi_line_data() {
        let stream = ": keep-alive\n\nevent: step\ndata: {\"a\":1}\n\nevent: token\ndata: one\ndata: two\n\ndata: no name\n\nevent: answer\ndata: {}";
        let got: Vec<Event> = events(stream.as_bytes()).map(|e| e.unwrap()).collect();
        let want = [
            ("step", "{\"a\":1}"),
            ("token", "one\ntwo"),
            ("message", "no name"),
            ("answer", "{}"),
        ];
        assert_eq!(got.len(), want.len(), "{got:?}");
        for (g, (name, data)) in got.iter().zip(want) {
            assert_eq!((g.name.as_str(), g.data.as_str()), (name, data));
        }
    }
}
