//! The T-SQL lexer: turns a batch's text into tokens.
//!
//! Every token records the 1-based line it starts on and its byte span in the source, so
//! the parser can report errors on the right line and capture exact source text (the
//! definition of a procedure, for instance). Keywords are not distinguished from
//! identifiers here: an unquoted name is a [`TokenKind::Word`] and the parser compares its
//! text case-insensitively.

use tessera_errors::msg;
use tessera_errors::SqlError;

/// Operators and punctuation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Punct {
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Amp,
    Pipe,
    Caret,
    Tilde,
    Eq,
    /// `<>`
    LtGt,
    /// `!=`
    BangEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    /// `!<`
    BangLt,
    /// `!>`
    BangGt,
    PlusEq,
    MinusEq,
    StarEq,
    SlashEq,
    PercentEq,
    AmpEq,
    PipeEq,
    CaretEq,
    LParen,
    RParen,
    Comma,
    Dot,
    Semicolon,
    Colon,
}

/// What a token is. The token's source text is in [`Token::text`].
#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    /// An unquoted identifier or keyword, including `#temp` and `##global` names.
    Word,
    /// `[name]` or `"name"`, with escapes (`]]`, `""`) resolved.
    QuotedIdent(String),
    /// `@name`; the text includes the `@`.
    Variable,
    /// `@@NAME`; the text includes the `@@`.
    GlobalVariable,
    /// `42`
    Integer,
    /// `1.5`, `.5`, `1.`
    Decimal,
    /// `1e3`, `2.5E-1`
    Float,
    /// `$1.50`: the amount without the currency sign.
    Money(String),
    /// `'text'` or `N'text'`, with `''` unescaped.
    String {
        value: String,
        unicode: bool,
    },
    /// `0x0AFF`; `0x` alone is empty.
    Binary(Vec<u8>),
    Punct(Punct),
    /// A character that starts no token (the parser reports it as a syntax error).
    Unknown,
    /// The end of the batch.
    Eof,
}

/// A token with its position in the batch.
#[derive(Clone, Debug, PartialEq)]
pub struct Token<'a> {
    pub kind: TokenKind,
    /// The token exactly as written.
    pub text: &'a str,
    /// 1-based line of the token's first character.
    pub line: u32,
    /// Byte offset of the token's first character.
    pub start: usize,
    /// Byte offset just past the token's last character.
    pub end: usize,
}

impl Token<'_> {
    /// Whether this is the unquoted word `keyword` (case-insensitive).
    pub fn is_word(&self, keyword: &str) -> bool {
        self.kind == TokenKind::Word && self.text.eq_ignore_ascii_case(keyword)
    }

    /// Whether this is the punctuation `p`.
    pub fn is_punct(&self, p: Punct) -> bool {
        self.kind == TokenKind::Punct(p)
    }

    /// The text SQL Server quotes in `Incorrect syntax near '…'`: the content of a string
    /// or quoted identifier, the text as written otherwise.
    pub fn display_text(&self) -> &str {
        match &self.kind {
            TokenKind::String { value, .. } | TokenKind::QuotedIdent(value) => value,
            _ => self.text,
        }
    }
}

/// The names in an expression's text (a CHECK constraint's definition) that may be its
/// table's columns — identifiers, quoted or not, not followed by a parenthesis (which
/// makes a function's name) — with the byte range each is written at. None for text that
/// does not tokenize.
pub fn name_references(text: &str) -> Option<Vec<(String, std::ops::Range<usize>)>> {
    let tokens = tokenize(text).ok()?;
    let mut out = Vec::new();
    for (i, tok) in tokens.iter().enumerate() {
        let name = match &tok.kind {
            TokenKind::Word => tok.text.to_string(),
            TokenKind::QuotedIdent(name) => name.clone(),
            _ => continue,
        };
        if !tokens.get(i + 1).is_some_and(|next| next.is_punct(Punct::LParen)) {
            out.push((name, tok.start..tok.end));
        }
    }
    Some(out)
}

/// Splits a batch into tokens; the last token is always [`TokenKind::Eof`].
///
/// Errors: 105 for an unclosed string or quoted identifier, 113 for an unclosed block
/// comment; both on the line where the batch ends.
pub fn tokenize(src: &str) -> Result<Vec<Token<'_>>, SqlError> {
    let mut lexer = Lexer { src, pos: 0, line: 1 };
    let mut tokens = Vec::new();
    loop {
        lexer.skip_trivia()?;
        let start = lexer.pos;
        let line = lexer.line;
        let Some(kind) = lexer.next_kind()? else {
            tokens.push(Token { kind: TokenKind::Eof, text: "", line, start, end: start });
            return Ok(tokens);
        };
        tokens.push(Token { kind, text: &src[start..lexer.pos], line, start, end: lexer.pos });
    }
}

struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    line: u32,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_' || c == '#'
}

fn is_ident_continue(c: char) -> bool {
    c.is_alphanumeric() || matches!(c, '_' | '@' | '#' | '$')
}

fn is_currency(c: char) -> bool {
    matches!(c, '$' | '£' | '€' | '¥')
}

impl<'a> Lexer<'a> {
    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    fn peek_nth(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        if c == '\n' {
            self.line += 1;
        }
        Some(c)
    }

    fn bump_while(&mut self, pred: impl Fn(char) -> bool) {
        while self.peek().is_some_and(&pred) {
            self.bump();
        }
    }

    fn at_end_error(&self, error: SqlError) -> SqlError {
        error.at_line(self.line)
    }

    /// Skips whitespace and comments.
    fn skip_trivia(&mut self) -> Result<(), SqlError> {
        loop {
            let rest = self.rest();
            if rest.starts_with("--") {
                self.bump_while(|c| c != '\n');
            } else if rest.starts_with("/*") {
                self.skip_block_comment()?;
            } else if self.peek().is_some_and(char::is_whitespace) {
                self.bump();
            } else {
                return Ok(());
            }
        }
    }

    /// Skips a `/* … */` comment, which may nest.
    fn skip_block_comment(&mut self) -> Result<(), SqlError> {
        let mut depth = 0usize;
        loop {
            let rest = self.rest();
            if rest.starts_with("/*") {
                depth += 1;
                self.pos += 2;
            } else if rest.starts_with("*/") {
                depth -= 1;
                self.pos += 2;
                if depth == 0 {
                    return Ok(());
                }
            } else if self.bump().is_none() {
                return Err(self.at_end_error(msg::MISSING_END_COMMENT.err()));
            }
        }
    }

    /// Lexes one token starting at the current position; None at the end of input.
    fn next_kind(&mut self) -> Result<Option<TokenKind>, SqlError> {
        let Some(c) = self.peek() else { return Ok(None) };
        let next = self.peek_nth(1);
        let kind = match c {
            '\'' => self.string(false)?,
            'N' | 'n' if next == Some('\'') => {
                self.bump();
                self.string(true)?
            }
            '0' if matches!(next, Some('x' | 'X')) => self.binary(),
            '0'..='9' => self.number(),
            '.' if next.is_some_and(|d| d.is_ascii_digit()) => self.number(),
            '[' => self.quoted_ident(']')?,
            '"' => self.quoted_ident('"')?,
            '@' => self.variable(),
            // A currency sign alone (`$`, as in `$-5`) is the money constant 0.
            c if is_currency(c) && next.is_none_or(|d| d.is_ascii_digit() || d == '.' || !is_ident_continue(d)) => {
                self.money()
            }
            c if is_ident_start(c) || c == '$' => {
                self.bump();
                self.bump_while(is_ident_continue);
                TokenKind::Word
            }
            _ => self.punct(),
        };
        Ok(Some(kind))
    }

    /// A string literal; the opening quote is the current character.
    fn string(&mut self, unicode: bool) -> Result<TokenKind, SqlError> {
        self.bump();
        let value = self.quoted_body('\'')?;
        Ok(TokenKind::String { value, unicode })
    }

    /// The content up to the closing `quote` (a doubled quote is an escaped one); the
    /// opening character has been consumed.
    fn quoted_body(&mut self, quote: char) -> Result<String, SqlError> {
        let body_start = self.pos;
        let mut value = String::new();
        loop {
            match self.bump() {
                Some(c) if c == quote => {
                    if self.peek() == Some(quote) {
                        self.bump();
                        value.push(quote);
                    } else {
                        return Ok(value);
                    }
                }
                Some(c) => value.push(c),
                None => {
                    let rest = &self.src[body_start..];
                    return Err(self.at_end_error(msg::UNCLOSED_QUOTATION_MARK.with(&[&rest])));
                }
            }
        }
    }

    fn quoted_ident(&mut self, close: char) -> Result<TokenKind, SqlError> {
        self.bump();
        Ok(TokenKind::QuotedIdent(self.quoted_body(close)?))
    }

    fn variable(&mut self) -> TokenKind {
        self.bump();
        let global = self.peek() == Some('@');
        if global {
            self.bump();
        }
        self.bump_while(is_ident_continue);
        if global {
            TokenKind::GlobalVariable
        } else {
            TokenKind::Variable
        }
    }

    fn digits(&mut self) {
        self.bump_while(|c| c.is_ascii_digit());
    }

    /// `123`, `1.5`, `.5`, `1.`, `1e3`, `1.5E-3`.
    fn number(&mut self) -> TokenKind {
        self.digits();
        let mut kind = TokenKind::Integer;
        if self.peek() == Some('.') {
            self.bump();
            self.digits();
            kind = TokenKind::Decimal;
        }
        if matches!(self.peek(), Some('e' | 'E')) {
            let sign = usize::from(matches!(self.peek_nth(1), Some('+' | '-')));
            if self.peek_nth(1 + sign).is_some_and(|c| c.is_ascii_digit()) {
                for _ in 0..=sign {
                    self.bump();
                }
                self.digits();
                kind = TokenKind::Float;
            }
        }
        kind
    }

    /// `$1.50`: the sign, then digits with an optional point (none: 0).
    fn money(&mut self) -> TokenKind {
        self.bump();
        let start = self.pos;
        self.digits();
        if self.peek() == Some('.') {
            self.bump();
            self.digits();
        }
        let digits = &self.src[start..self.pos];
        TokenKind::Money(if digits.is_empty() { "0".to_string() } else { digits.to_string() })
    }

    /// `0x0AFF`; an odd number of digits is padded on the left (`0xABC` = `0x0ABC`).
    fn binary(&mut self) -> TokenKind {
        self.pos += 2;
        let start = self.pos;
        self.bump_while(|c| c.is_ascii_hexdigit());
        let digits = &self.src[start..self.pos];
        let padded = if digits.len() % 2 == 1 { format!("0{digits}") } else { digits.to_string() };
        let bytes = padded
            .as_bytes()
            .chunks(2)
            .map(|pair| {
                let hex = std::str::from_utf8(pair).unwrap_or("00");
                u8::from_str_radix(hex, 16).unwrap_or(0)
            })
            .collect();
        TokenKind::Binary(bytes)
    }

    fn punct(&mut self) -> TokenKind {
        const TWO: [(&str, Punct); 15] = [
            ("<>", Punct::LtGt),
            ("!=", Punct::BangEq),
            ("<=", Punct::LtEq),
            (">=", Punct::GtEq),
            ("!<", Punct::BangLt),
            ("!>", Punct::BangGt),
            ("+=", Punct::PlusEq),
            ("-=", Punct::MinusEq),
            ("*=", Punct::StarEq),
            ("/=", Punct::SlashEq),
            ("%=", Punct::PercentEq),
            ("&=", Punct::AmpEq),
            ("|=", Punct::PipeEq),
            ("^=", Punct::CaretEq),
            ("=", Punct::Eq),
        ];
        let rest = self.rest();
        if let Some((text, p)) = TWO.iter().find(|(text, _)| rest.starts_with(text)) {
            self.pos += text.len();
            return TokenKind::Punct(*p);
        }
        let one = match self.bump() {
            Some('+') => Punct::Plus,
            Some('-') => Punct::Minus,
            Some('*') => Punct::Star,
            Some('/') => Punct::Slash,
            Some('%') => Punct::Percent,
            Some('&') => Punct::Amp,
            Some('|') => Punct::Pipe,
            Some('^') => Punct::Caret,
            Some('~') => Punct::Tilde,
            Some('<') => Punct::Lt,
            Some('>') => Punct::Gt,
            Some('(') => Punct::LParen,
            Some(')') => Punct::RParen,
            Some(',') => Punct::Comma,
            Some('.') => Punct::Dot,
            Some(';') => Punct::Semicolon,
            Some(':') => Punct::Colon,
            _ => return TokenKind::Unknown,
        };
        TokenKind::Punct(one)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<TokenKind> {
        tokenize(src).unwrap().into_iter().map(|t| t.kind).collect()
    }

    fn texts(src: &str) -> Vec<String> {
        tokenize(src).unwrap().into_iter().map(|t| t.text.to_string()).collect()
    }

    #[test]
    fn words_identifiers_and_variables() {
        assert_eq!(
            texts("select [a]]b], \"c\"\"d\", #t, ##g, @v, @@ROWCOUNT, x$1"),
            [
                "select",
                "[a]]b]",
                ",",
                "\"c\"\"d\"",
                ",",
                "#t",
                ",",
                "##g",
                ",",
                "@v",
                ",",
                "@@ROWCOUNT",
                ",",
                "x$1",
                ""
            ]
        );
        let k = kinds("[a]]b] \"c\"\"d\" @v @@x");
        assert_eq!(k[0], TokenKind::QuotedIdent("a]b".into()));
        assert_eq!(k[1], TokenKind::QuotedIdent("c\"d".into()));
        assert_eq!(k[2], TokenKind::Variable);
        assert_eq!(k[3], TokenKind::GlobalVariable);
    }

    #[test]
    fn numbers() {
        assert_eq!(
            kinds("1 1.5 .5 1e3 2.5E-1 $1.50 1."),
            [
                TokenKind::Integer,
                TokenKind::Decimal,
                TokenKind::Decimal,
                TokenKind::Float,
                TokenKind::Float,
                TokenKind::Money("1.50".into()),
                TokenKind::Decimal,
                TokenKind::Eof
            ]
        );
        // A number directly followed by a word: `SELECT 1a` is 1 with alias a.
        assert_eq!(texts("1a"), ["1", "a", ""]);
    }

    #[test]
    fn strings_and_binary() {
        let k = kinds("'it''s' N'ü' 0x0AFF 0x 0xABC");
        assert_eq!(k[0], TokenKind::String { value: "it's".into(), unicode: false });
        assert_eq!(k[1], TokenKind::String { value: "ü".into(), unicode: true });
        assert_eq!(k[2], TokenKind::Binary(vec![0x0a, 0xff]));
        assert_eq!(k[3], TokenKind::Binary(vec![]));
        assert_eq!(k[4], TokenKind::Binary(vec![0x0a, 0xbc]));
    }

    #[test]
    fn operators() {
        let ops: Vec<_> = kinds("+ - * / % & | ^ ~ = <> != < <= > >= !< !> += -= *= /= %= &= |= ^= ( ) , . ; :")
            .into_iter()
            .filter_map(|k| match k {
                TokenKind::Punct(p) => Some(p),
                _ => None,
            })
            .collect();
        assert_eq!(ops.len(), 32);
        assert_eq!(ops[10], Punct::LtGt);
        assert_eq!(ops[17], Punct::BangGt);
        assert_eq!(ops[25], Punct::CaretEq);
    }

    #[test]
    fn comments_and_lines() {
        let tokens = tokenize("a -- c\n/* x /* nested */ y\n */ b\n\nc").unwrap();
        let lines: Vec<_> = tokens.iter().map(|t| (t.text, t.line)).collect();
        assert_eq!(lines, [("a", 1), ("b", 3), ("c", 5), ("", 5)]);
        assert_eq!(tokens[1].start, 31);
    }

    #[test]
    fn lexical_errors() {
        let e = tokenize("select 'abc\ndef").unwrap_err();
        assert_eq!((e.number, e.severity, e.line), (105, 15, 2));
        assert_eq!(e.message, "Unclosed quotation mark after the character string 'abc\ndef'.");
        let e = tokenize("select [abc").unwrap_err();
        assert_eq!(e.message, "Unclosed quotation mark after the character string 'abc'.");
        let e = tokenize("select 1 /* /* */").unwrap_err();
        assert_eq!((e.number, e.message.as_str()), (113, "Missing end comment mark '*/'."));
    }

    #[test]
    fn unknown_characters_become_tokens() {
        assert_eq!(kinds("`?"), [TokenKind::Unknown, TokenKind::Unknown, TokenKind::Eof]);
    }
}
