//! The exact edit a setup makes, shown as one unified-diff hunk: the lines
//! that change, with two lines of context either side. Setup edits one
//! entry, so one hunk (common prefix and suffix removed) is the whole edit.

/// Lines longer than this are cut in the display (a minified file).
const WIDTH: usize = 160;
const CONTEXT: usize = 2;

fn clip(line: &str) -> String {
    if line.chars().count() <= WIDTH {
        return line.to_owned();
    }
    let mut cut: String = line.chars().take(WIDTH).collect();
    cut.push('…');
    cut
}

/// `-`/`+`/` ` lines from `before` to `after`, `@@ -l,n +l,n @@` first;
/// empty when they are equal.
pub fn hunk(before: &str, after: &str) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let max_suffix = old.len().min(new.len()) - prefix;
    let suffix = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take(max_suffix)
        .take_while(|(a, b)| a == b)
        .count();
    let start = prefix.saturating_sub(CONTEXT);
    let old_end = (old.len() - suffix + CONTEXT).min(old.len());
    let new_end = (new.len() - suffix + CONTEXT).min(new.len());
    let mut lines = vec![format!(
        "@@ -{},{} +{},{} @@",
        start + 1,
        old_end - start,
        start + 1,
        new_end - start
    )];
    lines.extend(old[start..prefix].iter().map(|l| format!(" {}", clip(l))));
    lines.extend(
        old[prefix..old.len() - suffix]
            .iter()
            .map(|l| format!("-{}", clip(l))),
    );
    lines.extend(
        new[prefix..new.len() - suffix]
            .iter()
            .map(|l| format!("+{}", clip(l))),
    );
    lines.extend(
        old[old.len() - suffix..old_end]
            .iter()
            .map(|l| format!(" {}", clip(l))),
    );
    lines
}

#[cfg(test)]
mod tests {
    use super::hunk;

    #[test]
    fn one_hunk_with_context() {
        let before = "a\nb\nc\nd\ne\n";
        let after = "a\nb\nc\nX\nd\ne\n";
        assert_eq!(
            hunk(before, after),
            vec!["@@ -2,4 +2,5 @@", " b", " c", "+X", " d", " e"]
        );
        assert!(hunk(before, before).is_empty());
        let removed = hunk("x\ny\nz\n", "x\nz\n");
        assert_eq!(removed, vec!["@@ -1,3 +1,2 @@", " x", "-y", " z"]);
    }
}
