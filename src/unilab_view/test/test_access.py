# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Who may arm from the view's page: loopback needs nothing, any other address the token."""

import pytest
from unilab_view.access import ArmAccess, is_loopback, page_url, parse_host


def test_loopback_addresses_and_the_others():
    for host in ('127.0.0.1', '127.0.0.2', '::1', '[::1]'):
        assert is_loopback(host), host
    for host in ('0.0.0.0', '::', '10.1.2.3', '192.168.0.5', 'fe80::1'):
        assert not is_loopback(host), host


def test_host_must_be_an_address_this_machine_can_listen_on():
    assert parse_host('127.0.0.1') == '127.0.0.1'
    assert parse_host('0.0.0.0') == '0.0.0.0'
    for bad in ('localhost', 'example.org', '999.1.1.1', '10.0.0', ''):
        with pytest.raises(ValueError, match=r'^--host .*not an IP address'):
            parse_host(bad)
    # An address of the documentation range (RFC 5737): no interface of this machine has it.
    with pytest.raises(ValueError, match=r'^--host 192\.0\.2\.77: cannot listen there'):
        parse_host('192.0.2.77')


def test_page_url_names_what_a_person_opens():
    assert page_url('127.0.0.1', 8080) == 'http://localhost:8080/'
    assert page_url('10.1.2.3', 81) == 'http://10.1.2.3:81/'
    assert page_url('fd00::2', 81) == 'http://[fd00::2]:81/'
    assert not page_url('0.0.0.0', 81).startswith('http://0.0.0.0')


def test_on_loopback_no_token_is_needed_and_nothing_is_refused():
    access = ArmAccess('127.0.0.1')
    assert not access.needs_token and access.token is None
    assert access.allows(None) and access.allows('anything')
    assert access.refused == 0


def test_off_loopback_only_the_token_arms_and_every_refusal_is_counted():
    access = ArmAccess('0.0.0.0')
    assert access.needs_token
    token = access.token
    assert len(token) >= 40  # 32 random bytes, URL-safe
    assert not access.allows(None)
    assert not access.allows('')
    assert not access.allows(token[:-1])
    assert not access.allows(token + 'x')
    assert not access.allows('é' * len(token))  # non-ASCII: refused, not an error
    assert not access.allows('\ud800' + token)  # a lone surrogate: refused, not an error
    assert not access.allows(12345)  # not text at all
    assert access.refused == 7
    assert access.allows(token)
    assert access.allows(f'  {token}\n')  # as pasted
    assert access.refused == 7


def test_every_view_gets_a_token_of_its_own():
    assert ArmAccess('0.0.0.0').token != ArmAccess('0.0.0.0').token
    assert ArmAccess('10.1.2.3').needs_token
