"""bench/corpus.py judges each corpus of tests/data: entries held, the share, and each failure."""

from __future__ import annotations

from tests.unit.bench_modules import import_bench

HELD = {
    "unseen.yaml": "200/200 held (100.0 %)",
    "holdout2.yaml": "100/100 held (100.0 %)",
    "holdout3.yaml": "100/100 held (100.0 %)",
    "holdout4a.yaml": "60/60 held (100.0 %)",
    "round5.yaml": "28/28 held (100.0 %)",
    "holdout4b.yaml": "59/60 held (98.3 %)",
    "holdout5.yaml": "55/60 held (91.7 %)",
    "holdout6.yaml": "59/60 held (98.3 %)",
    "holdout7.yaml": "59/60 held (98.3 %)",
    "holdout8.yaml": "60/60 held (100.0 %)",
    "holdout9.yaml": "59/60 held (98.3 %)",
    "holdout10.yaml": "57/60 held (95.0 %)",
    "holdout11.yaml": "58/60 held (96.7 %)",
    "holdout12.yaml": "57/60 held (95.0 %)",
    "holdout13.yaml": "55/60 held (91.7 %)",
    "holdout14.yaml": "56/60 held (93.3 %)",
    "holdout15.yaml": "58/60 held (96.7 %)",
    "holdout16.yaml": "56/60 held (93.3 %)",
    "holdout17.yaml": "59/60 held (98.3 %)",
    "holdout18.yaml": "57/60 held (95.0 %)",
    "holdout19.yaml": "59/60 held (98.3 %)",
    "holdout20.yaml": "58/60 held (96.7 %)",
    "holdout21.yaml": "57/60 held (95.0 %)",
    "holdout22.yaml": "53/60 held (88.3 %)",
    "holdout23.yaml": "59/60 held (98.3 %)",
    "holdout24.yaml": "55/60 held (91.7 %)",
    "holdout25.yaml": "58/60 held (96.7 %)",
    "holdout26.yaml": "54/60 held (90.0 %)",
    "holdout27.yaml": "51/60 held (85.0 %)",
    "holdout28.yaml": "54/60 held (90.0 %)",
    "holdout29.yaml": "57/60 held (95.0 %)",
    "holdout30.yaml": "60/60 held (100.0 %)",
    "holdout31.yaml": "58/60 held (96.7 %)",
    "holdout32.yaml": "60/60 held (100.0 %)",
    "holdout33.yaml": "59/60 held (98.3 %)",
    "holdout34.yaml": "58/60 held (96.7 %)",
    "holdout35.yaml": "55/60 held (91.7 %)",
    "holdout36.yaml": "57/60 held (95.0 %)",
    "holdout37.yaml": "56/60 held (93.3 %)",
    "holdout38.yaml": "55/60 held (91.7 %)",
    "holdout39.yaml": "55/60 held (91.7 %)",
    "holdout40.yaml": "58/60 held (96.7 %)",
    "holdout41.yaml": "54/60 held (90.0 %)",
    "holdout42.yaml": "52/60 held (86.7 %)",
    "holdout43.yaml": "48/60 held (80.0 %)",
    "holdout44.yaml": "53/60 held (88.3 %)",
    "holdout45.yaml": "56/60 held (93.3 %)",
    "holdout46.yaml": "52/60 held (86.7 %)",
    "holdout47.yaml": "55/60 held (91.7 %)",
    "holdout48.yaml": "59/60 held (98.3 %)",
    "holdout49.yaml": "60/60 held (100.0 %)",
    "holdout50.yaml": "60/60 held (100.0 %)",
    "holdout51.yaml": "60/60 held (100.0 %)",
    "holdout52.yaml": "55/60 held (91.7 %)",
    "holdout53.yaml": "58/60 held (96.7 %)",
    "holdout54.yaml": "55/60 held (91.7 %)",
    "holdout55.yaml": "51/60 held (85.0 %)",
    "holdout56.yaml": "57/60 held (95.0 %)",
    "holdout57.yaml": "58/60 held (96.7 %)",
    "holdout58.yaml": "51/60 held (85.0 %)",
    "holdout59.yaml": "53/60 held (88.3 %)",
    "holdout60.yaml": "60/60 held (100.0 %)",
    "holdout61.yaml": "58/60 held (96.7 %)",
    "holdout62.yaml": "59/60 held (98.3 %)",
    "holdout63.yaml": "58/60 held (96.7 %)",
    "holdout64.yaml": "58/60 held (96.7 %)",
    "holdout65.yaml": "57/60 held (95.0 %)",
    "holdout66.yaml": "55/60 held (91.7 %)",
    "holdout67.yaml": "59/60 held (98.3 %)",
    "holdout68.yaml": "55/60 held (91.7 %)",
    "holdout69.yaml": "58/60 held (96.7 %)",
    "holdout70.yaml": "58/60 held (96.7 %)",
    "holdout71.yaml": "56/60 held (93.3 %)",
    "holdout72.yaml": "54/60 held (90.0 %)",
    "holdout73.yaml": "56/60 held (93.3 %)",
}
"""What each fitted corpus holds today (its history is bench/corpus.py's FITTED): a change in either direction is seen."""


def test_a_leak_and_a_lost_keep_are_failures_a_held_entry_is_not() -> None:
    """An entry whose secret survives or whose keep string is hidden is listed; one that holds is not."""
    (bench,) = import_bench("corpus")
    held = {
        "tool": "held",
        "family": "x",
        "message": "password=hunter2, host=db",
        "secrets": ["hunter2"],
        "keep": ["host=db"],
    }
    leaked = {"tool": "leaked", "family": "x", "message": "value hunter2", "secrets": ["hunter2"], "keep": []}
    lost = {"tool": "lost", "family": "x", "message": "password=hunter2", "secrets": [], "keep": ["hunter2"]}
    assert bench.judged(leaked) == (["hunter2"], []) and bench.judged(lost) == ([], ["hunter2"])
    lines = bench.failures([held, leaked, lost])
    assert len(lines) == 2
    assert "leaked [x]: leaked=['hunter2']" in lines[0]
    assert "lost [x]: leaked=[] lost=['hunter2']" in lines[1]


def test_every_corpus_present_meets_its_target(capsys) -> None:
    """Run over tests/data: each present corpus prints its count and an OK verdict, and the run exits 0."""
    (bench,) = import_bench("corpus")
    assert bench.main() == 0
    out = capsys.readouterr().out
    assert "leaks.yaml: " in out and "MISSED" not in out
    assert [f"{name}: {held}" for name, held in HELD.items() if f"{name}: {held}" not in out] == []
    assert (
        "  - solana-py (Helius RPC endpoint) [sdk]: leaked=[] lost=" in out
        and "(known: holdout40's wallet" in out
    )
    assert "  - eredis [driver]: leaked=['Rk2vT9pL4wXq'] lost=[] (known: holdout41's password" in out
    assert "  - MinIO Client (mc) [cli]: leaked=['YIJEQTZG0XPL7PTNT2Y8'] lost=[] (known: holdout42's" in out
    assert (
        "  - php-rdkafka [driver]: leaked=['J8xq2LmPvR7tBn4', 'Kp5!vW9zRq2Lm8T'] lost=[] (known: holdout43's"
        in out
    )
    assert "  - Serverpod [config]: leaked=['WiU3Z*9XXphu.KB9'] lost=[] (known: holdout44's" in out
    assert (
        "  - Venafi [cli]: leaked=['3f5e9a27-b1c4-4d08-8e63-a92f0d71c5b4'] lost=[] (known: holdout45's" in out
    )
    assert "  - Sealos [cli]: leaked=['YNdnr8jW0WjRYT'] lost=[] (known: holdout46's" in out
    assert "  - BorgBackup [cli]: leaked=[] lost=" in out and "(known: holdout47's archive" in out
    assert "  - GUS BIR1 (REGON) [i18n]: leaked=['1h6vsflnk2t7mwkaed26'] lost=[] (known: holdout48's" in out
    assert "  - Zabbix agent 2 [config]: leaked=['Yp7rK2wQx9Tm4Vb'] lost=[] (known: holdout52's" in out
    assert "  - Cribl Stream [config]: leaked=[] lost=['AKIA4XQ7KD2M9TNB6WEZ'] (known: holdout53's" in out
    assert "  - TeamCity build agent [ci]: leaked=['4LC9HPLRdiA9sLG5'] lost=[] (known: holdout54's" in out
    assert (
        "  - OpenNode [webhook]: leaked=['c7e2a9f14b0d83e65a1c7f9b2d4e08a3f6b1c5d9e2a70f4b8c3d6e1a9f5b2c04'] lost=[]"
        in out
    )
    assert (
        "  - SmartEmailing API [http]: leaked=['1amyi4hkqqk2myujvbnqqpcq4x917skm2dvru547'] lost=[] (known: holdout56's"
        in out
    )
    assert "  - confluent CLI [cli]: leaked=[] lost=['XQ7MZ2KR4BVN6TLC'] (known: holdout57" in out
    assert "  - AiSensy [i18n]: leaked=['318406'] lost=[] (known: holdout58's" in out
    assert "  - Podio [webhook]: leaked=['7d3b0b1c4e'] lost=[] (known: holdout59's" in out
    # measured, never fitted: the honest generalisation figure, printed beside the 97 % target
    assert (
        "holdout74.yaml (held out, not fitted): 46/60 held (76.7 %)   target >= 97 % NOT REACHED"
        "   no secret leaked: 52/60 (86.7 %)"
    ) in out
    assert "  - Clover webhooks [webhook]: leaked=['23eba0c9-758d-4970-9aae-cedd5d8a863f'] lost=[]" in out
    assert "  - Penneo PHP SDK [sdk]: leaked=['3f9a0c7e51b2d84e6a1c'] lost=[] (known: holdout73" in out
    assert (
        "  - GOV.UK Notify [http]: leaked=[] lost=['26785a09-ab16-4eb0-8407-a37497a57506', 'fw_citizen_alerts'] (known: holdout72"
        in out
    )
    assert "  - iikoTransport API [i18n]: leaked=['c9e2f71a4b'] lost=[] (known: holdout71" in out
    assert (
        "  - e-Boekhouden.nl SOAP API [i18n]: leaked=['A7C3E9F1-52B4-4D08-9E6A-1F3B7C5D2E80'] lost=[] (known: holdout70"
        in out
    )
    assert "  - Marathon REST API [http]: leaked=['wSe7Vq2RnP0kXb3M'] lost=[] (known: holdout68" in out
    assert "  - Riemann [webhook]: leaked=[] lost=['9kd3qyx7wp8bz4h2c1ma'] (known: holdout67" in out
    assert "  - Deluge [config]: leaked=['Cabbage77'] lost=[] (known: holdout66" in out
    assert (
        "  - Gandi [sdk]: leaked=[] lost=['Xq2p7LmN9vT4kR1wZ8yB3cH6jD5fS0aG-Ue7Ki2Oo'] (known: holdout65"
        in out
    )
    assert "  - Jumio [webhook]: leaked=['a7Kq2Xw9Tz4Lm8Rb1NvY3cHs6Pd0Jf5E'] lost=[] (known: holdout64" in out
    assert "  - ECPG [driver]: leaked=['Tz9!qW4mLx2Rv7Kp'] lost=[] (known: holdout63" in out
    assert (
        "  - Aikido Security CI gating [ci]: leaked=[] lost=['1b9f0e7c2d4a6b8e3f5a7c9d1e2b4f6a8c0d2e4f'] (known: holdout61"
        in out
    )
    assert "Bitrix24 REST webhook [url path]" in out and "(known: " in out
