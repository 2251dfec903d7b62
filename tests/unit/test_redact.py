from kpipe.redact import mask_passwords


def test_url_passwords_are_masked_and_the_rest_kept():
    assert mask_passwords("kpipe tune x --storage postgresql://ann:s3cr%40t!@db:5432/kpipe --trials 3") == \
        "kpipe tune x --storage postgresql://ann:***@db:5432/kpipe --trials 3"
    assert mask_passwords("mysql+pymysql://u:p@h/d and sqlite:///a/b.db") == "mysql+pymysql://u:***@h/d and sqlite:///a/b.db"
    assert mask_passwords("postgresql://ann@db/kpipe") == "postgresql://ann@db/kpipe"  # no password: unchanged
