"""Helpers the tests share: servers, fakes, waits, tiers. Nothing here is a test."""
