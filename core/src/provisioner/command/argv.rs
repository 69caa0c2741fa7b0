//! A command line split into argv with shell-like quoting (no shell), and the shell
//! operators refused without `shell`.

use crate::provisioner::command::SHELL_OPERATORS;

/// The argv a command line runs as; the error completes "the <setting> …".
pub(super) fn argv(line: &str, shell: bool) -> Result<Vec<String>, String> {
    if shell {
        if line.trim().is_empty() {
            return Err("is empty".into());
        }
        return Ok(vec!["/bin/sh".into(), "-c".into(), line.into()]);
    }
    let words = split_words(line).map_err(|e| format!("does not split into words: {e}"))?;
    if let Some((op, _)) = words
        .iter()
        .find(|(w, quoted)| !quoted && SHELL_OPERATORS.contains(&w.as_str()))
    {
        return Err(format!(
            "contains the shell operator '{op}': quote it, or run the command with a shell"
        ));
    }
    let argv: Vec<String> = words.into_iter().map(|(w, _)| w).collect();
    let Some(program) = argv.first() else {
        return Err("is empty".into());
    };
    if program.is_empty() {
        return Err("names an empty program".into());
    }
    if program.contains('/') && !program.starts_with('/') {
        return Err(format!(
            "names the program '{program}' by a relative path: give an absolute path, \
             or a name looked up in PATH"
        ));
    }
    Ok(argv)
}

/// Splits a command line into words the way a POSIX shell does, without expanding anything:
/// blanks separate words; `'…'` is literal; in `"…"` a backslash escapes only `"` `\` `$`
/// `` ` `` and newline; elsewhere a backslash escapes any character; `#` at the start of a
/// word starts a comment. `$VAR`, `~`, `*` stay as they are.
pub fn split_command_line(line: &str) -> Result<Vec<String>, String> {
    Ok(split_words(line)?.into_iter().map(|(w, _)| w).collect())
}

/// Words, each with whether any part of it was quoted or escaped.
pub(super) fn split_words(line: &str) -> Result<Vec<(String, bool)>, String> {
    let mut words = Vec::new();
    let mut word: Option<(String, bool)> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if let Some(w) = word.take() {
                    words.push(w);
                }
            }
            '\'' => {
                let (w, quoted) = word.get_or_insert_with(Default::default);
                *quoted = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => w.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                let (w, quoted) = word.get_or_insert_with(Default::default);
                *quoted = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c @ ('"' | '\\' | '$' | '`')) => w.push(c),
                            Some('\n') => {}
                            Some(c) => {
                                w.push('\\');
                                w.push(c);
                            }
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => w.push(c),
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => match chars.next() {
                // A line continuation joins, it does not start a word.
                Some('\n') => {}
                Some(c) => {
                    let (w, quoted) = word.get_or_insert_with(Default::default);
                    *quoted = true;
                    w.push(c);
                }
                None => return Err("it ends with a backslash".into()),
            },
            '#' if word.is_none() => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
            }
            c => word.get_or_insert_with(Default::default).0.push(c),
        }
    }
    words.extend(word);
    Ok(words)
}
