//! A database URL fit for errors and logs.

/// `url` without its password, fit for errors and logs.
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // A password may also come as a parameter: then no parameter shows.
    let rest = match rest.split_once('?') {
        Some((head, query)) if query.contains("password") => head,
        _ => rest,
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}{path}")
        }
        None => format!("{scheme}://{rest}"),
    }
}

/// Whether `url` carries a password (in its userinfo or a parameter).
pub fn has_password(url: &str) -> bool {
    redacted(url) != url
}

#[cfg(test)]
mod tests {
    use super::{has_password, redacted};

    #[test]
    fn which_urls_carry_a_password() {
        assert!(has_password("postgres://gantry:s3cret@db/gantry"));
        assert!(has_password("postgres://db/gantry?password=s3cret"));
        assert!(!has_password("postgres://gantry@db/gantry"));
        assert!(!has_password("postgres://db/gantry?sslmode=require"));
    }

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redacted("postgres://gantry:s3cret@db:5432/gantry"),
            "postgres://gantry@db:5432/gantry"
        );
        assert_eq!(
            redacted("postgres://postgres@127.0.0.1/x"),
            "postgres://postgres@127.0.0.1/x"
        );
        assert_eq!(
            redacted("postgres://h/x?sslmode=disable"),
            "postgres://h/x?sslmode=disable"
        );
        assert_eq!(redacted("postgres://h/x?password=s3cret"), "postgres://h/x");
    }
}
