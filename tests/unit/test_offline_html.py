"""The single-file report is rewritten to open offline: no analytics tag, data before the app."""

from __future__ import annotations

import pytest

from mirrordrill.reports.offline_html import UnexpectedReportLayout, make_offline

# The shape Allure 3.18's awesome plugin writes (scripts shortened).
_ALLURE_318 = """<!DOCTYPE html><html><head><script>window.allureReportOptions = {}</script></head><body>
    <div id="app"></div>
    <script>
      window.allure = window.allure || {};
    </script>
    <script   src="data:text/javascript;base64,QVBQ"></script>
    <script async src="https://www.googletagmanager.com/gtag/js?id=G-LNDJ3J7WT0"></script>
    <script>
        window.dataLayer = window.dataLayer || [];
        function gtag(){dataLayer.push(arguments);}
        gtag('config', 'G-LNDJ3J7WT0', {});
    </script>
    <script async>
      window.allureReportDataReady = false;
      window.allureReportData = window.allureReportData || {};
      function d(name, value){ return new Promise(function (resolve) { resolve(true); }); }
    </script>
    <script defer>
      Promise.allSettled([d("widgets/statistic.json","e30=")])
        .then(function(){ window.allureReportDataReady = true; })
    </script>
</body></html>
"""


def test_the_analytics_tag_goes_and_the_data_comes_before_the_app(tmp_path):
    html = tmp_path / "index.html"
    html.write_text(_ALLURE_318)
    make_offline(html)
    text = html.read_text()
    assert "googletagmanager" not in text and "gtag" not in text
    ready, data, app = (text.index("allureReportDataReady = false"), text.index('d("widgets/statistic.json"'),
                        text.index('src="data:text/javascript'))
    assert ready < data < app
    assert text.count("<script") == text.count("</script>") == 5  # options, allure, data x2, app
    make_offline(html)  # a second pass changes nothing
    assert html.read_text() == text


def test_a_report_without_data_files_keeps_its_ready_flag_first(tmp_path):
    html = tmp_path / "index.html"
    html.write_text('<body><script   src="data:text/javascript;base64,QVBQ"></script>\n'
                    "<script async>\n        window.allureReportDataReady = true;\n      </script></body>")
    make_offline(html)
    text = html.read_text()
    assert text.index("allureReportDataReady = true") < text.index("data:text/javascript")


def test_a_layout_the_pinned_allure_does_not_write_is_refused(tmp_path):
    html = tmp_path / "index.html"
    html.write_text("<html><body><script src='app.js'></script></body></html>")
    with pytest.raises(UnexpectedReportLayout, match="Allure version pinned"):
        make_offline(html)
