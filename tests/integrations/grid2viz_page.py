"""Load a grid2viz page in headless Chromium (Selenium and ChromeDriver), wait until its
charts are drawn, save a screenshot and print the texts drawn in its charts (JSON).

Run by ``test_grid2viz.py`` with the Python of grid2viz's own virtual environment, which has
Selenium (grid2viz's dash[testing]); grid_vec's environment needs none of it.

    python grid2viz_page.py URL SCREENSHOT HEADING CHROMEDRIVER
"""

from __future__ import annotations

import json
import sys
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# Chromium here: no network but localhost, no background connections, a fresh profile
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--window-size=1400,1000",
)  # fmt: skip
WAIT_S = 120


def main(url: str, screenshot: str, heading: str, chromedriver: str) -> None:
    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        driver.get(url)
        # the page's heading, and a chart drawn under it (dash builds both in the browser)
        WebDriverWait(driver, WAIT_S).until(
            lambda d: heading in d.page_source and d.find_elements(By.CSS_SELECTOR, "svg text")
        )
        time.sleep(2)  # plotly's last transitions
        driver.save_screenshot(screenshot)
        print(json.dumps([e.text for e in driver.find_elements(By.CSS_SELECTOR, "svg text")]))
    finally:
        driver.quit()


if __name__ == "__main__":
    main(*sys.argv[1:5])
